"""The playground's API types (frontend/src/api/schema.d.ts) are generated from the service's OpenAPI document: a
change to a serializer that is not carried to the UI's types (`make api-types`) fails here."""

from __future__ import annotations

import subprocess

import pytest

from tests.live import ROOT
from tests.ui.conftest import node_can_build

FRONTEND = ROOT / "frontend"
COMMITTED = FRONTEND / "src" / "api" / "schema.d.ts"


@pytest.mark.skipif(
    not node_can_build() or not (FRONTEND / "node_modules" / ".bin" / "openapi-typescript").exists(),
    reason="no Node.js 20.19+ with the frontend's packages (make ui installs them)",
)
def test_the_ui_types_are_those_of_the_api_document(tmp_path):
    fresh = tmp_path / "schema.d.ts"
    made = subprocess.run(
        ["bash", "scripts/api-types.sh", str(fresh)], cwd=FRONTEND, capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    assert "RunSpec:" in fresh.read_text()  # the generator wrote the API's components
    assert fresh.read_text() == COMMITTED.read_text(), "frontend/src/api/schema.d.ts is stale: run `make api-types`"
