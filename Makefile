# dynasched-gym: `make run` installs into .venv and runs the main job; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# The main job available so far: every dispatching rule on the embedded instances, validated.
run: install
	$(PY) -m dynasched_gym compare

lint: install
	$(PY) -m ruff check .

test: lint
	$(PY) -m pytest -q -n 2 -p no:cacheprovider

bench: install
	$(PY) -m scripts.bench

clean:
	rm -rf $(VENV) .bench .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
