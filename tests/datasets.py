"""Where the shared datasets are (real pages with ground truth, never copied into the project): `../shared/datasets`
next to the project, as the project is checked out for work; SHARED_DATASETS when set; else the machine's
/work/shared/datasets, for a clone made elsewhere (a fresh-clone CI in /tmp). Tests that read them fail, not skip,
when none of these exists."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlsplit

_CANDIDATES = [
    *([Path(os.environ["SHARED_DATASETS"])] if os.environ.get("SHARED_DATASETS") else []),
    Path(__file__).resolve().parents[1].parent / "shared" / "datasets",
    Path("/work/shared/datasets"),
]
DATASETS = next((path for path in _CANDIDATES if path.is_dir()), _CANDIDATES[0])

_GENERIC_SECOND_LEVEL = {"co", "com", "org", "net", "ac", "gov", "edu", "ne", "or", "go"}  # bbc.co.uk, abc.net.au


def site(url: str | None, page_id: str) -> str:
    """The site a page is from: its host's registered domain, roughly (shop.example.com and example.com are one site;
    bbc.co.uk is not co.uk); the page's id when it has no URL."""
    host = (urlsplit(url or "").hostname or "").lower().removeprefix("www.")
    if not host:
        return page_id
    labels = host.split(".")
    kept = 3 if len(labels) >= 3 and labels[-2] in _GENERIC_SECOND_LEVEL else 2
    return ".".join(labels[-kept:])


def wcxb_halves() -> dict[str, str]:
    """WCXB dev split's halves, page id -> "tuning" or "held-out": files sorted by id, even positions in the tuning half
    (what the page-type classifier was trained and the strategies tuned on), odd ones held out. A held-out page on a
    site that has a page in the tuning half too is "held-out, site seen": 142 of the 748 held-out pages are, and the
    page-type classifier is right on more of them (0.88) than on the others (0.815). The held-out figure that speaks
    for pages of other sites is the one without them."""
    truth_files = sorted((DATASETS / "wcxb-dev" / "ground-truth").glob("*.json"))
    sites = [site(json.loads(truth_file.read_text()).get("url"), truth_file.stem) for truth_file in truth_files]
    tuning_sites = set(sites[::2])
    return {
        truth_file.stem: "tuning" if n % 2 == 0 else "held-out, site seen" if sites[n] in tuning_sites else "held-out"
        for n, truth_file in enumerate(truth_files)
    }
