# Two entry points (see README): `make run` and `make test`. Both set up what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup run test lint bench browser test-tools

setup: $(VENV)/.installed browser
	$(PY) manage.py migrate --noinput

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# Playwright cannot download its browser on a closed network: use the system's Chromium, installing it if absent.
browser:
	@if [ -n "$$BROWSER_EXECUTABLE" ] || command -v chromium >/dev/null || command -v google-chrome >/dev/null; then \
		echo "browser: found"; \
	else \
		echo "browser: installing Debian's chromium"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-liberation >/dev/null; \
	fi

# Tests drive `profile login`'s visible browser on a virtual display.
test-tools:
	@if command -v xvfb-run >/dev/null; then \
		echo "xvfb: found"; \
	else \
		echo "xvfb: installing Debian's xvfb"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq xvfb >/dev/null; \
	fi

run: setup
	$(PY) manage.py serve --no-migrate

lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run

test: setup test-tools lint
	$(PY) -m pytest

bench: setup
	$(PY) -m pytest tests/bench -s -p no:randomly
