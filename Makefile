# Two entry points (see README): `make run` and `make test`. Both set up what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup run test lint bench bench-tools browser test-tools ui test-ui test-postgres api-types lock

setup: $(VENV)/.installed browser ui
	$(PY) manage.py migrate --noinput

# Installed from the lock (every package pinned, with its hashes): the same on every machine.
$(VENV)/.installed: requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements-dev.lock
	touch $@

# After editing requirements.txt or requirements-dev.txt (the human-edited lists): pin everything they pull in,
# with hashes. The image installs requirements.lock; make installs requirements-dev.lock (the same and the tools).
LOCK := $(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	--no-emit-find-links
lock: $(VENV)/.installed
	$(LOCK) --output-file=requirements.lock requirements.txt
	$(LOCK) --output-file=requirements-dev.lock requirements-dev.txt

# Playwright cannot download its browser on a closed network: use the system's Chromium, installing it if absent.
browser:
	@if [ -n "$$BROWSER_EXECUTABLE" ] || command -v chromium >/dev/null || command -v google-chrome >/dev/null; then \
		echo "browser: found"; \
	else \
		echo "browser: installing Debian's chromium"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-liberation >/dev/null; \
	fi

# $(call debian_package,command,package): installs Debian's package when the command is not found (as root, or
# through sudo).
define debian_package
	@if command -v $(1) >/dev/null; then \
		echo "$(2): found"; \
	else \
		echo "$(2): installing Debian's $(2)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(2) >/dev/null; \
	fi
endef

# Tests drive `profile login`'s visible browser on a virtual display.
test-tools:
	$(call debian_package,xvfb-run,xvfb)

# The playground (frontend/: Vite + React + TypeScript), built into frontend/dist and served by Django at /.
# Needs Node.js 20.19+ with npm; without npm the service still runs (API only) and / says how to build it.
# Rebuilt only when a source changed; gzip copies next to the files let whitenoise send them compressed.
NPM ?= npm
UI_SOURCES := $(shell find frontend/src frontend/public -type f 2>/dev/null) frontend/index.html \
	frontend/vite.config.ts frontend/tsconfig.json frontend/tsconfig.app.json frontend/tsconfig.node.json

NODE_OK := node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a == 20 && b >= 19) ? 0 : 1)'

ui:
	@if command -v $(NPM) >/dev/null && $(NODE_OK) 2>/dev/null; then \
		$(MAKE) --no-print-directory -s frontend/dist/index.html; \
	else \
		echo "ui: Node.js 20.19+ with npm not found, the playground is not built (install it, then make ui)"; \
	fi

frontend/node_modules/.installed: frontend/package.json frontend/package-lock.json
	cd frontend && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

frontend/dist/index.html: frontend/node_modules/.installed $(UI_SOURCES) | $(VENV)/.installed
	cd frontend && $(NPM) run --silent build
	$(PY) -m whitenoise.compress --quiet frontend/dist

# The UI's API types (frontend/src/api/schema.d.ts) from the OpenAPI document: run it after changing a serializer
# or a view's schema (tests/ui/test_api_types.py fails until then).
api-types: $(VENV)/.installed frontend/node_modules/.installed
	cd frontend && PYTHON=$(abspath $(PY)) bash scripts/api-types.sh

# The UI's type check, formatting check and unit tests (Vitest): a few seconds.
test-ui:
	@if command -v $(NPM) >/dev/null && $(NODE_OK) 2>/dev/null; then \
		$(MAKE) --no-print-directory -s frontend/node_modules/.installed && \
		cd frontend && $(NPM) run --silent lint && $(NPM) run --silent test; \
	else \
		echo "test-ui: Node.js 20.19+ with npm not found, skipped"; \
	fi

run: setup
	$(PY) manage.py serve --no-migrate

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(PY) manage.py makemigrations --check --dry-run

# pytest in two processes (pytest-xdist, whole files each; the files that start the whole service go first, so that
# no long one runs alone at the end): most tests wait on browsers, servers and subprocesses, so two share the two cores
# well (10 min instead of 17.7 on a quiet 2-core machine, measured side by side). TEST_WORKERS= (empty) runs one.
# Two earlier tries failed on a test sensitive to load (scheduled replays after a restart; the rate limit across web
# processes, whose second process was still starting); both were mended before this default.
TEST_WORKERS ?= 2
test: setup test-tools lint test-ui
	$(PY) -m pytest $(if $(TEST_WORKERS),-n $(TEST_WORKERS) --dist loadfile)
	$(MAKE) --no-print-directory test-postgres

# The end-to-end tests again on the machine's PostgreSQL and Redis: the in-process ones on a test database there,
# every live service on a scratch database of its own (tests/live.py, LIVE_BACKEND). Skipped when they are not up.
# (tests/runs/test_events_stream.py is not here: the first pass already runs it on both backends. Tests of files,
# the CLI's argument handling and the backlog count are the same on every backend and run once.)
PG_TESTS := tests/runs/test_live_service.py tests/runs/test_events_backpressure.py tests/runs/test_execute.py \
	tests/queries/test_api.py tests/queries/test_concurrent_replays.py tests/queries/test_drift.py \
	tests/queries/test_cli.py tests/profiles/test_api.py tests/profiles/test_logged_in_runs.py
PG_SKIP := events_max_backlog
test-postgres: $(VENV)/.installed
	@if $(PY) -c "import sys; from tests.live import postgres_available as p, redis_available as r; sys.exit(not (p() and r()))"; then \
		echo "test-postgres: the end-to-end tests on PostgreSQL and Redis"; \
		LIVE_BACKEND=postgres-redis DATABASE_URL=postgresql://postgres@127.0.0.1:5432/test \
		REDIS_URL=redis://127.0.0.1:6379/5 $(PY) -m pytest -q $(PG_TESTS) -k "not $(PG_SKIP)"; \
	else \
		echo "test-postgres: PostgreSQL on 127.0.0.1:5432 or Redis on 127.0.0.1:6379 not running, skipped"; \
	fi

# The benchmarks (tests/bench/, not part of make test), ending in one table: each figure next to the goal an issue
# named for it. A quick pass on small samples by default (a few minutes); FULL=1 for the issues' sizes (an hour or
# more).
bench: setup bench-tools
	$(PY) -m tests.bench $(if $(FULL),--full)

# The web tier's benchmark loads the service with wrk (a Python client would take a core from the server it measures).
bench-tools:
	$(call debian_package,wrk,wrk)
