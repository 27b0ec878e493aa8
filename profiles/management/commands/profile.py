from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from profiles.store import ProfileExists, ProfileNotFound, ProfileStore, StateFileError, profile_path
from runs.engine.browser import Browser, process_browser
from runs.engine.login_check import check_login
from service.kernel.cli import CliCommand


class Command(CliCommand):
    help = (
        "Login profiles (stored browser sessions): log in by hand, import, list, check, delete. Exit 0 on success, "
        "1 when `check` finds a profile stale or logged out, 2 on bad usage or input (an unknown profile, a bad name "
        "or file, a name already taken, no display for `login`)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        login = actions.add_parser("login", help="Open a visible browser, log in by hand, press Enter to save.")
        login.add_argument("name", help="Profile name (a-z, 0-9, - and _).")
        login.add_argument("--url", required=True, help="Where to start, usually the site's login page.")
        login.add_argument("--overwrite", action="store_true", help="Replace an existing profile of that name.")
        listing = actions.add_parser("list", help="Profiles with their cookie staleness.")
        listing.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")
        check = actions.add_parser("check", help="Staleness of one or all profiles; with --url, test the login.")
        check.add_argument("name", nargs="?", help="One profile (default: all).")
        check.add_argument("--url", help="Load this URL with the profile and report whether it looks logged out.")
        check.add_argument("--json", action="store_true", dest="as_json", help="Print JSON.")
        imports = actions.add_parser("import", help="Store a Playwright storage-state JSON file as a profile.")
        imports.add_argument("name", help="Profile name.")
        imports.add_argument("file", help="Path of the storage-state JSON file.")
        imports.add_argument("--overwrite", action="store_true", help="Replace an existing profile of that name.")
        delete = actions.add_parser("delete", help="Delete a profile's file.")
        delete.add_argument("name", help="Profile name.")

    def handle(self, *args, action: str, **options) -> None:
        self.store = ProfileStore(settings.DATA_DIR)
        try:
            getattr(self, f"_{action}")(**options)
        except StateFileError as error:
            raise CommandError(str(error), returncode=2) from None
        except ProfileNotFound as error:
            raise CommandError(f"There is no profile named {error.args[0]!r}.", returncode=2) from None
        except ProfileExists as error:
            raise CommandError(
                f"A profile named {error.args[0]!r} exists; add --overwrite to replace it.", returncode=2
            ) from None

    def _login(self, *, name: str, url: str, overwrite: bool, **_) -> None:
        profile_path(settings.DATA_DIR, name)  # refuse a bad name before opening anything
        if self.store.exists(name) and not overwrite:
            raise ProfileExists(name)
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            raise CommandError(
                "No display: `profile login` opens a visible browser window. Run it on a desktop session, set "
                "DISPLAY, or use a virtual display: xvfb-run -a python manage.py profile login "
                f"{name} --url {url}   (or import a state file with `profile import`).",
                returncode=2,
            )
        browser = Browser(
            settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, headless=False, sandbox=settings.BROWSER_SANDBOX
        )
        try:
            context = browser.new_context()
            context.new_page().goto(url)
            self.stdout.write(f"Log in to {url} in the browser window, then press Enter here to save '{name}'.")
            self.stdout.flush()
            if not sys.stdin.readline():
                raise CommandError("Standard input closed before Enter; nothing was saved.", returncode=1)
            state = context.storage_state()
        finally:
            browser.close()
        info = self.store.write(name, state, overwrite=overwrite)
        self._print_summary(info.to_dict())

    def _list(self, *, as_json: bool, **_) -> None:
        profiles = [info.to_dict() for info in self.store.list()]
        if as_json:
            self.stdout.write(json.dumps(profiles, indent=2))
            return
        if not profiles:
            self.stdout.write("No profiles yet: `profile login <name> --url <url>` or `profile import <name> <file>`.")
        for profile in profiles:
            self._print_summary(profile)

    def _check(self, *, name: str | None, url: str | None, as_json: bool, **_) -> None:
        if url and not name:
            raise CommandError("--url needs a profile name.", returncode=2)
        profiles = [self.store.info(name).to_dict()] if name else [info.to_dict() for info in self.store.list()]
        stale = [p["name"] for p in profiles if p["cookies"]["status"] in ("expired", "empty")]
        report: dict = {"profiles": profiles}
        if url:
            browser = process_browser(settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, settings.BROWSER_SANDBOX)
            result = check_login(browser, url, storage_state_path=str(profile_path(settings.DATA_DIR, name)))
            report["login"] = {
                "url": url,
                "finalUrl": result.final_url,
                "status": result.status,
                "loggedOut": result.logged_out,
                "reason": result.reason,
            }
        if as_json:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            for profile in profiles:
                self._print_summary(profile)
            if url:
                verdict = "looks LOGGED OUT" if report["login"]["loggedOut"] else "looks logged in"
                style = self.style.ERROR if report["login"]["loggedOut"] else self.style.SUCCESS
                self.stdout.write(style(f"{name} at {url}: {verdict}: {report['login']['reason']}"))
        if url and report["login"]["loggedOut"]:
            raise CommandError(f"{name} looks logged out at {url}.", returncode=1)
        if stale:
            raise CommandError(f"Stale profile(s): {', '.join(stale)}.", returncode=1)

    def _import(self, *, name: str, file: str, overwrite: bool, **_) -> None:
        try:
            state = json.loads(Path(file).read_text())
        except OSError as error:
            raise CommandError(f"Could not read {file}: {error.strerror}.", returncode=2) from None
        except ValueError:
            raise CommandError(f"{file} is not JSON; export a Playwright storage state.", returncode=2) from None
        info = self.store.write(name, state, overwrite=overwrite)
        self._print_summary(info.to_dict())

    def _delete(self, *, name: str, **_) -> None:
        self.store.delete(name)
        self.stdout.write(self.style.SUCCESS(f"Deleted profile {name}."))

    def _print_summary(self, profile: dict) -> None:
        cookies = profile["cookies"]
        domains = ", ".join(cookies["domains"]) or "-"
        self.stdout.write(
            f"{profile['name']:<20} {cookies['status']:<13} {cookies['cookieCount']} cookies "
            f"(expired {cookies['expired']}, expiring {cookies['expiringWithin7Days']}, "
            f"session {cookies['sessionOnly']})  domains: {domains}  updated {profile['updatedAt']}"
        )
