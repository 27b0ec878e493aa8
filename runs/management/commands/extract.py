from __future__ import annotations

import json

from django.core.management.base import CommandParser

from runs.cli import RunCommand, add_run_options, state_fields
from service.kernel.cli import for_terminal, read_json_option


class Command(RunCommand):
    help = (
        "Extract JSON matching a schema from a page. Selector schemas (x-selector, x-source) need no model; other "
        "schemas use MODEL_PROVIDER. The run executes in this process (--queue: by the workers); prints the JSON. "
        "Exit 0 on success, 1 if the run failed, 2 on bad usage or input (nothing is run); Ctrl-C cancels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="The page to extract from (http or https).")
        parser.add_argument("--schema", required=True, help="JSON schema of the result: inline JSON, or @file.")
        parser.add_argument("--instruction", help="What to extract, in words (for model-driven extraction).")
        add_run_options(parser)

    def handle(self, *args, url: str, schema: str, instruction: str | None, **options) -> None:
        spec = {
            "kind": "extract",
            "url": url,
            "schema": read_json_option(schema, "--schema"),
            "options": {"timeoutMs": options["timeout_ms"]},
            **state_fields(options["profile"], options["storage_state"]),
        }
        if instruction:
            spec["instruction"] = instruction
        run = self.run_spec(spec, options)
        if run is not None and not options["as_json"]:
            self.stdout.write(for_terminal(json.dumps(run.result, indent=2, ensure_ascii=False), self.stdout))
