# dynasched-gym: `make run` installs into .venv and runs the main job; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench peers bench-peers clean

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

# Speed and quality figures: simulator, environments, cold start and memory (docs/performance.md), SSI
# validation, the tiers' acceptance table, SESC vs the evolutionary baselines, Brandimarte makespans,
# lookahead vs the rule library.
bench: install
	$(PY) -m scripts.bench
	$(PY) -m scripts.validate_ssi
	$(PY) -m scripts.tier_acceptance
	$(PY) -m scripts.calibrate_compare
	$(PY) -m scripts.fjsp_table
	$(PY) -m scripts.compare_agents

# The peers of scripts/bench.py (JSSEnv, job-shop-lib, dsbx 0.4.0) in their own virtual environment, each
# installed on its own so that one failing to install is reported by the bench instead of stopping the others;
# torch==2.13.0 (the CPU build) first, since dsbx pulls torch in.
PEERS ?= .peers/venv
PEERS_PY := $(PEERS)/bin/python
PEERS_STAMP := $(PEERS)/.installed

$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS)
	-$(PEERS_PY) -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
	-$(PEERS_PY) -m pip install --quiet --disable-pip-version-check "jssenv==1.1.0"
	-$(PEERS_PY) -m pip install --quiet --disable-pip-version-check "job-shop-lib==1.7.2"
	-$(PEERS_PY) -m pip install --quiet --disable-pip-version-check "dsbx==0.4.0"
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)

# Ours and the peers side by side (docs/performance.md); writes .bench/bench.json.
bench-peers: install peers
	$(PY) -m scripts.bench peer_python=$(PEERS_PY)

clean:
	rm -rf $(VENV) .bench .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
