# Development entry points. Needs only python3 (3.11+), pip and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PLUGINS := ecp agent_rpc dci openexperts skillctl
RUNTIME_STAMP := $(VENV)/.agentpack-runtime
STAMP := $(VENV)/.agentpack-installed
PYTEST_ARGS ?=
# Marker expression for pytest; empty selects every test, the interop ones included.
PYTEST_MARKERS ?=

.PHONY: install demo check lint-imports test bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# One pip command installs the whole tree, every sibling editable: what the tour needs (every plugin, MCP serving)...
$(RUNTIME_STAMP): $(BIN)/python pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-e ".[all]" $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $(RUNTIME_STAMP)

# ...and the development tools on top (pytest, linters, Ray, Playwright, the PostgreSQL queue's drivers).
$(STAMP): $(RUNTIME_STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-e ".[all,dev]" $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $(STAMP)

install: $(STAMP)

demo: $(RUNTIME_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh

# Lint, format, types and the import-layer contracts (core, and each plugin's own layers).
check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(MAKE) --no-print-directory lint-imports

lint-imports: install
	$(BIN)/lint-imports --no-cache
	for p in $(PLUGINS); do \
		if grep -q '^\[tool.importlinter\]' plugins/$$p/pyproject.toml; then \
			$(BIN)/lint-imports --no-cache --config plugins/$$p/pyproject.toml || exit 1; \
		fi; \
	done

test: check
	$(BIN)/python -m pytest -m "$(PYTEST_MARKERS)" $(PYTEST_ARGS)

# Every bench script (a file of bench/ with a __main__ block), full size or in its short --quick mode (CI).
BENCH_SCRIPTS = $(shell grep -l '^if __name__ == "__main__":' bench/*.py)

bench: install
	for b in $(BENCH_SCRIPTS); do $(BIN)/python $$b || exit 1; done

bench-quick: install
	for b in $(BENCH_SCRIPTS); do echo "== $$b --quick"; $(BIN)/python $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info core/*.egg-info plugins/*/*.egg-info
