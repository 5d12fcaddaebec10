# Development entry points. Needs only python3 (3.11+), pip and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PLUGINS := ecp agent_rpc dci openexperts skillctl
STAMP := $(VENV)/.agentpack-installed
PYTEST_ARGS ?=

.PHONY: install demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# One pip command installs the whole tree, every sibling editable.
$(STAMP): $(BIN)/python pyproject.toml $(wildcard plugins/*/pyproject.toml)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		-e ".[all,dev]" $(foreach p,$(PLUGINS),-e plugins/$(p))
	touch $(STAMP)

install: $(STAMP)

demo: install
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo.sh

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info core/*.egg-info plugins/*/*.egg-info
