from __future__ import annotations

import json

from django.core.management.base import CommandParser

from runs.cli import RunCommand, add_run_options, state_fields
from service.kernel.cli import for_terminal, positive_int


class Command(RunCommand):
    help = (
        "Let a browser agent reach a goal on a site (needs MODEL_PROVIDER). It can type a stored credential "
        "(--cred) and keep the logged-in session as a profile (--save-profile). Each step prints as it happens; "
        "the agent's answer is printed at the end. Exit 0 on success, 1 if the run failed, 2 on bad usage or input "
        "(nothing is run); Ctrl-C cancels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("url", help="Where the agent starts (http or https).")
        parser.add_argument("--goal", required=True, help="What the agent should achieve, in words.")
        parser.add_argument("--cred", help="A stored credential (`cred set`) the agent may type into its domains.")
        parser.add_argument(
            "--save-profile", dest="save_profile", help="Store the browser session at the end as this profile."
        )
        parser.add_argument(
            "--overwrite-profile",
            dest="overwrite_profile",
            action="store_true",
            help="Replace the --save-profile profile if it exists (else the run is refused).",
        )
        parser.add_argument(
            "--max-steps", dest="max_steps", type=positive_int, default=25, help="At most this many actions."
        )
        add_run_options(parser)

    def handle(self, *args, url: str, goal: str, cred: str | None, save_profile: str | None, **options) -> None:
        spec = {
            "kind": "agent",
            "url": url,
            "goal": goal,
            "options": {"maxSteps": options["max_steps"], "timeoutMs": options["timeout_ms"]},
            **state_fields(options["profile"], options["storage_state"]),
        }
        if cred:
            spec["cred"] = cred
        if save_profile:
            spec["saveProfile"] = save_profile
        if options["overwrite_profile"]:
            spec["overwriteProfile"] = True
        run = self.run_spec(spec, options)
        if run is not None and not options["as_json"]:
            result = run.result
            shown = result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False)
            self.stdout.write(for_terminal(shown, self.stdout))
            if save_profile:
                self.follower.say(f"saved the session as profile {save_profile}")
