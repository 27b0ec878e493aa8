"""`manage.py cred`: a credential set from standard input, listed without its secrets, deleted for good."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from tests.live import ROOT
from tests.runs.test_cli_input import typed


def cred_set(data_dir, name: str, *, domain: str, username: str, secret: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "manage.py", "cred", "set", name, "--domain", domain, "--username", username],
        cwd=ROOT,
        env={**env, "SERVICE_DATA_DIR": str(data_dir)},
        input=secret + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_delete_removes_the_credential_and_runs_can_no_longer_name_it(capsys, data_dir, site):
    made = cred_set(data_dir, "shop", domain="shop.example", username="ada", secret="canary-password-7")
    assert (made.returncode, made.stdout, made.stderr) == (0, "Saved credential shop for shop.example.\n", "")
    path = data_dir / "credentials" / "shop.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    code, out, _ = typed(capsys, "cred", "list", "--json")
    assert code == 0 and "canary-password-7" not in out
    assert [credential["name"] for credential in json.loads(out)] == ["shop"]

    assert typed(capsys, "cred", "delete", "shop") == (0, "Deleted credential shop.\n", "")
    assert not path.exists()
    assert typed(capsys, "cred", "list", "--json")[:2] == (0, "[]\n")

    # Gone means gone: deleting again and naming it in a run are refused, exit 2, nothing else touched.
    assert typed(capsys, "cred", "delete", "shop") == (
        2,
        "",
        "error: There is no credential named 'shop' (see `cred list`).\n",
    )
    assert typed(capsys, "agent", site.url("/login"), "--goal", "x", "--cred", "shop") == (
        2,
        "",
        "error: --cred: There is no credential named 'shop'; create it with `manage.py cred set`.\n",
    )


def test_delete_refuses_a_name_that_could_not_be_a_credential(capsys, data_dir):
    (data_dir / "keep.json").write_text("{}")
    assert typed(capsys, "cred", "delete", "../keep") == (
        2,
        "",
        "error: A credential name is 1 to 64 characters of a-z, 0-9, '-' and '_'.\n",
    )
    assert (data_dir / "keep.json").exists()
