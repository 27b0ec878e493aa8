"""The shared kernel every app builds on, and which imports none of them (import-linter keeps it so: `make lint`):
the error shape (errors), request bodies (parsers), strict serializers and the name rule (serializers, names), API
keys and who may call (keys, auth), the read-only admin (admin) and the command-line layer (cli)."""
