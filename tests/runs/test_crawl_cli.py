"""`manage.py crawl`: a crawl run in the command's own process, its pages written as Markdown files with an index."""

from __future__ import annotations

import json

import pytest

from tests.runs.test_cli import data_dir, manage  # noqa: F401 (data_dir is a fixture)
from tests.runs.test_crawl import CrawlSite

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def crawl_site():
    with CrawlSite() as site:
        yield site


def test_crawl_out_writes_a_markdown_file_per_page_and_an_index(data_dir, crawl_site, tmp_path):  # noqa: F811
    out = tmp_path / "site"
    done = manage(data_dir, "crawl", crawl_site.base + "/", "--sitemap", "off", "--max-depth", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    files = sorted(path.name for path in out.iterdir())
    # The start page (/, written as index-2.md: index.md is the index), its in-scope links one away (/a, /b, the
    # calendar's first month); what they link to is past --max-depth 1.
    assert files == ["a.md", "b.md", "calendar-month-1.md", "index-2.md", "index.md"], files
    assert "Home is a page of the crawl site" in (out / "index-2.md").read_text()
    assert "A is a page of the crawl site" in (out / "a.md").read_text()
    index = (out / "index.md").read_text()
    assert "[A](a.md)" in index and f"{crawl_site.base}/a" in index
    listed = json.loads(manage(data_dir, "runs", "list", "--kind", "crawl", "--json").stdout)
    assert listed[0]["status"] == "succeeded" and listed[0]["url"] == crawl_site.base + "/"


def test_crawl_prints_its_page_count_and_bad_options_are_exit_2(data_dir, crawl_site):  # noqa: F811
    done = manage(data_dir, "crawl", crawl_site.base + "/", "--sitemap", "off", "--max-pages", "2")
    assert done.returncode == 0, done.stderr
    assert "2 pages {'succeeded': 2}" in done.stdout
    bad = manage(data_dir, "crawl", crawl_site.base + "/", "--max-pages", "0")
    assert bad.returncode == 2 and "--max-pages" in bad.stderr, bad.stderr
