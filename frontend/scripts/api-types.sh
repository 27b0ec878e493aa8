#!/usr/bin/env bash
# src/api/schema.d.ts, the API's types, generated from the service's OpenAPI document (/api/schema) with
# openapi-typescript and formatted like the rest of the sources. `make api-types` writes it; a test
# (tests/ui/test_api_types.py) fails when the committed file is not what this makes.
# Usage: scripts/api-types.sh [output file]   (run from frontend/; PYTHON: the project's Python)
set -euo pipefail
out=$(realpath -m "${1:-src/api/schema.d.ts}")
python=$(realpath -ms "${PYTHON:-../.venv/bin/python}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The document as the code describes it, not as this machine is configured (limits come from settings).
(cd .. && env -u DATABASE_URL -u REDIS_URL -u RUN_TIMEOUT_MAX_MS -u BATCH_MAX_RUNS DATA_DIR="$work/data" \
  "$python" manage.py spectacular --format openapi-json --fail-on-warn --file "$work/openapi.json" 2>"$work/log") \
  || { cat "$work/log" >&2; exit 1; }
node_modules/.bin/openapi-typescript "$work/openapi.json" --output "$work/schema.d.ts" --default-non-nullable false --empty-objects-unknown --silent >/dev/null
node_modules/.bin/prettier --stdin-filepath src/api/schema.d.ts < "$work/schema.d.ts" > "$out"
