# Two entry points (see README): `make serve` and `make test`. Both set up .venv from scratch.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

$(BIN)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[dev,embeddings]'
	touch $@

.PHONY: install serve test lint
install: $(BIN)/.installed

serve: install
	$(BIN)/recloop serve

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: install lint
	$(BIN)/pytest -q
