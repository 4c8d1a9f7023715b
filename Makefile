# `make demo` and `make test` each create .venv when missing and install into it.
# The stamp files make a second run skip pip when pyproject.toml has not changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Let Python keep the checkout's bytecode (git-ignored __pycache__) even where the environment
# says not to: otherwise every process compiles the package again, and every pytest worker
# rewrites and compiles each test module again (collection 17 s -> 5 s in each worker).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint kernels typecheck clean

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
# mypy uses one core: the other compiles the numba kernels meanwhile (`kernels`), which a fresh
# checkout's suite otherwise compiled in both workers and in subprocesses at once (cold 837 s
# against warm 739 s of pytest on 2 cores).
test: $(VENV)/.installed-dev
	$(MAKE) --no-print-directory -j2 lint kernels
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

# Compile (or load) every cached numba kernel once: the demo's jobs, then the online replay of its
# data (`detect`'s round kernels), then the reference features' (the tests' slow path: what
# `import tsfeatures` compiles, cached in the environment; 20.5 s cold, 7.4 s cached). Output in
# $(VENV)/kernels; quiet unless it fails.
kernels: $(VENV)/.installed
	@$(BIN)/triage demo --out $(VENV)/kernels > $(VENV)/kernels.log 2>&1 \
	  && $(BIN)/triage detect --data $(VENV)/kernels/data --out $(VENV)/kernels/detect.csv >> $(VENV)/kernels.log 2>&1 \
	  && $(BIN)/python -c "import numpy; from triage.features.reference import window_characteristics as w; \
	                       w(numpy.arange(30.0) % 7)" >> $(VENV)/kernels.log 2>&1 \
	  || { cat $(VENV)/kernels.log; exit 1; }

# ruff, then mypy on the packages listed under [tool.mypy] in pyproject.toml.
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Benchmarks are not part of `make test`: each has its command in BENCHMARKS.md.

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache .mypy_cache
