# dynasched-gym: `make run` installs into .venv and runs the main job; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench clean

# torch==2.13.0 first: a local CPU build here, where an unpinned torch would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# The main job: the embedded default leaderboard (rules, lookahead, random, shipped PPO, clairvoyant references on
# easy..extreme, small size); evaluates the episodes missing from outputs/results.jsonl, writes outputs/leaderboard/.
run: install
	$(PY) -m scripts.leaderboard

lint: install
	$(PY) -m ruff check .

test: lint
	$(PY) -m pytest -q -n 2 -p no:cacheprovider

# Speed and quality figures: simulator, environments, SSI validation, SESC vs the evolutionary baselines,
# Brandimarte makespans, lookahead vs the rule library on the hard tier.
bench: install
	$(PY) -m scripts.bench
	$(PY) -m scripts.bench_env
	$(PY) -m scripts.validate_ssi
	$(PY) -m scripts.calibrate_compare
	$(PY) -m scripts.fjsp_table
	$(PY) -m scripts.compare_agents

clean:
	rm -rf $(VENV) .bench .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
