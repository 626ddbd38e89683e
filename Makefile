# axon_eval — every target creates .venv and installs the package when it is missing or out of date,
# so on a fresh machine with Python 3.11 `make run` and `make test` are all a newcomer types.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.axon-eval-installed
KERNEL := axon-eval

.DEFAULT_GOAL := help
.PHONY: help setup run test docs lab bench data studies clean-venv

help: ## list every target
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), f"axon_eval needs Python >= 3.11, found {sys.version.split()[0]} at {sys.executable}"'
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[dev]'
	$(VPY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "axon_eval (.venv)" >/dev/null
	@touch $(STAMP)

setup: $(STAMP) ## create .venv, install axon_eval with its dev extras, register the Jupyter kernel

# TURNS=path/to/turns.jsonl evaluates your own evidence instead (its labels are unknown, so none are read)
TURNS ?=
run: $(STAMP) ## evaluate the bundled sample (or TURNS=file.jsonl) with the offline heuristic judge (notebooks/01_evaluate.ipynb)
	$(VPY) -m axon_eval run notebooks/01_evaluate.ipynb -f notebooks/params/default.yaml \
		$(if $(TURNS),-p turns_file $(abspath $(TURNS)) -p labels_file null -p run_name evaluate-own)

test: $(STAMP) ## check the import layers (lint-imports), build the docs, then run the test suite (offline, no API key needed)
	$(VENV)/bin/lint-imports --no-logo
	$(MAKE) --no-print-directory docs
	$(VPY) -m pytest -q

# Warnings are errors (-W, every one reported first with --keep-going), nitpicky (-n: every reference must
# resolve), a fresh environment each time (-E: an unchanged page's warning is not skipped). Offline.
DOCS_OUT := docs/_build
docs: $(STAMP) ## build the documentation site into docs/_build/html (Sphinx + MyST, warnings are errors)
	@start=$$(date +%s); \
	$(VPY) -m sphinx -W --keep-going -n -E -q -b html docs $(DOCS_OUT)/html && \
	echo "docs: $(DOCS_OUT)/html/index.html ($$(( $$(date +%s) - start )) s)"

# Jupyter refuses to start as root without --allow-root (common in containers); LAB_ARGS adds options,
# e.g. `make lab LAB_ARGS=--no-browser` on a machine without a browser.
LAB_ARGS ?=
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

lab: $(STAMP) ## open JupyterLab at the repository root, on notebooks/ (runs/ reachable; LAB_ARGS=--no-browser on a headless machine)
	$(VENV)/bin/jupyter lab --notebook-dir=. --LabApp.default_url=/lab/tree/notebooks $(ROOT_FLAG) $(LAB_ARGS)

bench: $(STAMP) ## benchmarks: prints a table, writes runs/<date>_bench/bench.json
	$(VPY) -m axon_eval.bench

data: $(STAMP) ## rebuild everything under data/ from axon_eval.fixtures (deterministic)
	$(VPY) -m axon_eval.fixtures --out data
	$(VPY) -m axon_eval.fixtures.realdb --out data

studies: $(STAMP) ## run every study notebook (notebooks/02_*.ipynb onwards) into runs/
	@shopt -s nullglob; nbs=(notebooks/0[2-9]_*.ipynb notebooks/[1-9][0-9]_*.ipynb); \
	if [ $${#nbs[@]} -eq 0 ]; then echo "no study notebooks yet (notebooks/02_*.ipynb ...)"; fi; \
	for nb in "$${nbs[@]}"; do $(VPY) -m axon_eval run $$nb || exit 1; done

clean-venv: ## remove .venv (the next target re-creates it)
	rm -rf $(VENV)
