from __future__ import annotations

import getpass
import json
import sys

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from profiles.credentials import CredentialNotFound, CredentialStore
from profiles.store import NAME_PATTERN, StateFileError
from runs.engine.spec import Credential, CredentialSite
from service.kernel.cli import CliCommand


class Command(CliCommand):
    help = (
        "Credentials for agent runs (--cred). Secrets are read from a prompt or standard input, never from the "
        "command line; files are 0600 in <dataDir>/credentials/. Exit 0 on success, 2 on bad usage or input (an "
        "unknown credential, a bad name)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        put = actions.add_parser("set", help="Create or replace a credential.")
        put.add_argument("name", help="Credential name (a-z, 0-9, - and _).")
        put.add_argument(
            "--domain",
            action="append",
            required=True,
            help=(
                "A site it may be typed into; repeat for more. `example.com` or `example.com:8443`: https, that host "
                "and its subdomains; `http://host[:port]`: plain http too, that exact host only."
            ),
        )
        put.add_argument("--username", required=True, help="The username (not secret).")
        put.add_argument("--totp", action="store_true", help="Also read a TOTP secret (base32) after the password.")
        listing = actions.add_parser("list", help="Names and domains, never the values.")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")
        delete = actions.add_parser("delete", help="Delete a credential.")
        delete.add_argument("name", help="Credential name.")

    def handle(self, *args, action: str, **options) -> None:
        self.store = CredentialStore(settings.DATA_DIR)
        name = options.get("name")
        if name is not None and not NAME_PATTERN.match(name):
            raise CommandError("A credential name is 1 to 64 characters of a-z, 0-9, '-' and '_'.", returncode=2)
        try:
            getattr(self, f"_{action}")(**options)
        except StateFileError as error:
            raise CommandError(str(error), returncode=2) from None
        except CredentialNotFound as error:
            raise CommandError(
                f"There is no credential named {error.args[0]!r} (see `cred list`).", returncode=2
            ) from None

    def _secret(self, prompt: str) -> str:
        if sys.stdin.isatty():
            return getpass.getpass(prompt)
        line = sys.stdin.readline()
        if not line:
            raise CommandError(f"Standard input ended before the {prompt.strip(': ').lower()}.", returncode=2)
        return line.rstrip("\n")

    def _set(self, *, name: str, domain: list[str], username: str, totp: bool, **_) -> None:
        password = self._secret("Password: ")
        if not password:
            raise CommandError("The password is empty.", returncode=2)
        totp_secret = self._secret("TOTP secret: ") if totp else None
        domains = tuple(d.strip().lower().lstrip(".") for d in domain if d.strip())
        for entry in domains:
            try:
                CredentialSite.parse(entry)
            except ValueError as error:
                raise CommandError(str(error), returncode=2) from None
        self.store.write(
            Credential(name=name, username=username, password=password, domains=domains, totp_secret=totp_secret)
        )
        self.stdout.write(self.style.SUCCESS(f"Saved credential {name} for {', '.join(domains)}."))

    def _list(self, *, as_json: bool, **_) -> None:
        credentials = self.store.list()
        if as_json:
            self.stdout.write(json.dumps(credentials, indent=2))
            return
        for credential in credentials:
            totp = " (TOTP)" if credential["hasTotp"] else ""
            self.stdout.write(f"{credential['name']:<20} {', '.join(credential['domains'])}{totp}")

    def _delete(self, *, name: str, **_) -> None:
        self.store.delete(name)
        self.stdout.write(self.style.SUCCESS(f"Deleted credential {name}."))
