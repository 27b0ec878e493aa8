from __future__ import annotations

import json as jsonlib

from django.core.management.base import CommandError, CommandParser
from django.db import IntegrityError

from service.kernel.cli import CliCommand
from service.kernel.keys import ApiKey


class Command(CliCommand):
    help = (
        "Create, list and revoke API keys. A new key is printed once; only its hash is stored. Exit 0 on success, "
        "2 on bad usage or input (a name already taken, no such key)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a key and print it once.")
        create.add_argument("name", help="A name to tell the key apart, e.g. the client that uses it.")
        create.add_argument("--json", action="store_true", dest="as_json", help="Print {name, key} as JSON.")
        listing = actions.add_parser("list", help="List keys (names and prefixes, never the keys).")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print the list as JSON.")
        revoke = actions.add_parser("revoke", help="Revoke a key by name.")
        revoke.add_argument("name", help="The key's name.")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _create(self, *, name: str, as_json: bool = False, **_) -> None:
        try:
            _, raw = ApiKey.issue(name)
        except IntegrityError:
            raise CommandError(
                f"A key named {name!r} already exists; revoke it or pick another name.", returncode=2
            ) from None
        if as_json:
            self.stdout.write(_dumps({"name": name, "key": raw}))
        else:
            self.stdout.write(raw)
            self.stderr.write(self.style.WARNING("This is the only time the key is shown; store it now."))

    def _list(self, *, as_json: bool = False, **_) -> None:
        keys = [
            {
                "name": key.name,
                "prefix": key.prefix,
                "createdAt": key.created_at.isoformat(),
                "revoked": key.revoked_at is not None,
            }
            for key in ApiKey.objects.all()
        ]
        if as_json:
            self.stdout.write(_dumps(keys))
            return
        for key in keys:
            state = "revoked" if key["revoked"] else "active"
            self.stdout.write(f"{key['name']:<24} {key['prefix']}…  {state:<8} {key['createdAt']}")

    def _revoke(self, *, name: str, **_) -> None:
        key = ApiKey.objects.active().filter(name=name).first()
        if key is None:
            raise CommandError(f"There is no active key named {name!r}.", returncode=2)
        key.revoke()
        self.stdout.write(self.style.SUCCESS(f"Revoked {name}."))


def _dumps(value) -> str:
    return jsonlib.dumps(value, indent=2)
