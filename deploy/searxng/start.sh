#!/bin/sh
# SearXNG's start in compose (the search profile): its secret is made here, at every start, unless SEARXNG_SECRET
# gives one; then the image's own entrypoint (the arguments) runs. Nothing fixed ships: the secret is never in a
# file, and settings.yml holds SearXNG's placeholder, which SearXNG itself refuses to run with.
set -eu
if [ -z "${SEARXNG_SECRET:-}" ]; then
    SEARXNG_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
fi
export SEARXNG_SECRET
exec "$@"
