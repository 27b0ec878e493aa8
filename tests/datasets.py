"""Where the shared datasets are (real pages with ground truth, never copied into the project): `../shared/datasets`
next to the project, as the project is checked out for work; SHARED_DATASETS when set; else the machine's
/work/shared/datasets, for a clone made elsewhere (a fresh-clone CI in /tmp). Tests that read them fail, not skip,
when none of these exists."""

from __future__ import annotations

import os
from pathlib import Path

_CANDIDATES = [
    *([Path(os.environ["SHARED_DATASETS"])] if os.environ.get("SHARED_DATASETS") else []),
    Path(__file__).resolve().parents[1].parent / "shared" / "datasets",
    Path("/work/shared/datasets"),
]
DATASETS = next((path for path in _CANDIDATES if path.is_dir()), _CANDIDATES[0])
