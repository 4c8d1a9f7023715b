# `make demo` and `make test` each create .venv when missing and install into it.
# The stamp files make a second run skip pip when pyproject.toml has not changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/triage demo --out demo-out

# The whole check: lint (ruff, mypy), then the full test suite. worksteal: a worker that runs
# out of tests takes some of the other's (the installed wheel's tour alone takes minutes).
test: lint
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

# ruff, then mypy on the packages listed under [tool.mypy] in pyproject.toml.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Benchmarks are not part of `make test`: each has its command in BENCHMARKS.md.

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache .mypy_cache
