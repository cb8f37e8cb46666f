# Two entry points on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   ?= fixtures/rmsnorm_naive

.PHONY: demo test lint venv fixtures clean fuzz
FUZZ_SECONDS ?= 180

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The modules compiled once, as pip compiles a package it installs (an editable install is not
# compiled, and where PYTHONDONTWRITEBYTECODE is set nothing is compiled on first use either:
# every command would compile traceana's sources again, 0.07 s of each; docs/benchmarks.md).
# PYTHONWARNINGS: setuptools' editable-install warning box is for its own users, not ours.
$(VENV)/.installed: $(BIN)/python pyproject.toml setup.py $(wildcard trace_analyzer/*/*.c trace_analyzer/*/*.h)
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e .
	$(BIN)/python -m compileall -q trace_analyzer capture
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt requirements-capture.txt
	PYTHONWARNINGS=ignore $(BIN)/pip install --quiet -e '.[test]' -r requirements-test.txt
	touch $@

venv: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/traceana gaps $(DEMO)
	@echo '($(DEMO) is a synthetic profile, made by fixtures/make_fixtures.py; to capture your own: README.md)' >&2

# ruff (lint and format) and mypy over the package, as configured in pyproject.toml.
lint: $(VENV)/.installed-test
	$(BIN)/ruff check trace_analyzer capture
	$(BIN)/ruff format --check trace_analyzer capture
	$(BIN)/mypy

# Every test, spread over the cores (pytest-xdist), the slowest named at the end.
test: lint
	$(BIN)/python -m pytest -n auto --durations=15

# Regenerate the checked-in fixture profiles from their script.
fixtures: $(VENV)/.installed
	$(BIN)/python fixtures/make_fixtures.py

$(VENV)/.installed-fuzz: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[fuzz]'
	touch $@

# Fuzz every reader for FUZZ_SECONDS each (fuzz/README.md); not part of `make test`.
fuzz: $(VENV)/.installed-fuzz
	$(BIN)/python fuzz/fuzz_readers.py all --seconds $(FUZZ_SECONDS)

clean:
	rm -rf $(VENV) .pytest_cache
