"""The crawl's decisions: one spelling per page, scope, globs, limits, traps, robots, sitemaps, politeness, resume."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from runs.engine.crawl_rules import (
    DEFAULT_TEMPLATE_CAP,
    MAX_SITEMAP_URLS,
    SKIP_REASONS,
    CrawlScope,
    Frontier,
    RobotsRules,
    canonical_of,
    glob_to_regex,
    links_and_canonical,
    links_of,
    normalize_url,
    page_key,
    parse_sitemap,
    retry_after_seconds,
)

UA = "websvc"
ROBOTS_TXT = """\
# A real-looking robots.txt
User-agent: Googlebot
Disallow: /

User-agent: *
Disallow: /private/
Disallow: /search
Allow: /private/public-note
Crawl-delay: 5

Sitemap: https://example.com/sitemap_index.xml
Sitemap: https://example.com/news-sitemap.xml.gz
"""


def frontier_for(start: str = "https://example.com/", robots: str = "", **options) -> Frontier:
    scope_options = {key: options.pop(key) for key in ("scope", "max_depth", "include", "exclude") if key in options}
    frontier = Frontier(CrawlScope.of(start, **scope_options), user_agent=UA, **options)
    frontier.learn_robots(frontier.robots_needed(start), RobotsRules.parse(robots))
    return frontier


# Normalisation


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://example.com/page#section-2", "https://example.com/page"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("HTTPS://Example.COM/Docs/", "https://example.com/Docs/"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com/docs/", "https://example.com/docs/"),
        ("https://example.com/?b=2&a=1&a=0", "https://example.com/?a=1&a=0&b=2"),
        (
            "https://example.com/p?utm_source=x&id=7&UTM_Medium=y&gclid=1&fbclid=2&ref_src=tw",
            "https://example.com/p?id=7",
        ),
        ("https://example.com/p?utm_campaign=spring", "https://example.com/p"),
        ("https://bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("https://example.com/a b/%7euser/%2f", "https://example.com/a%20b/~user/%2F"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("  https://example.com/x  ", "https://example.com/x"),
    ],
)
def test_one_page_has_one_spelling(url, normal):
    assert normalize_url(url) == normal


@pytest.mark.parametrize(
    ("href", "normal"),
    [
        ("guide", "https://example.com/docs/guide"),
        ("../blog/", "https://example.com/blog/"),
        ("/about?x=1#top", "https://example.com/about?x=1"),
        ("//cdn.example.com/a", "https://cdn.example.com/a"),
        ("?page=2", "https://example.com/docs/intro?page=2"),
    ],
)
def test_relative_urls_resolve_against_the_page(href, normal):
    assert normalize_url(href, "https://example.com/docs/intro") == normal


@pytest.mark.parametrize(
    "url", ["mailto:a@example.com", "javascript:void(0)", "tel:+4912345", "ftp://example.com/f", "http://x:99999/", ""]
)
def test_what_is_not_a_web_page_has_no_spelling(url):
    assert normalize_url(url) is None


# Scope and globs


def test_glob_double_star_crosses_slashes_and_single_star_does_not():
    docs = glob_to_regex("/docs/**")
    assert docs.fullmatch("/docs/a/b/c")
    assert docs.fullmatch("/docs")
    assert not docs.fullmatch("/documents")
    one_level = glob_to_regex("/docs/*")
    assert one_level.fullmatch("/docs/a")
    assert not one_level.fullmatch("/docs/a/b")
    anywhere = glob_to_regex("**/print/**")
    assert anywhere.fullmatch("/print")
    assert anywhere.fullmatch("/docs/v2/print/page")
    assert not anywhere.fullmatch("/docs/blueprint/page")
    assert glob_to_regex("*.pdf").fullmatch("/report.pdf")
    assert not glob_to_regex("*.pdf").fullmatch("/a/report.pdf")
    assert glob_to_regex("**.pdf").fullmatch("/a/report.pdf")


DOCS = "https://www.example.com/docs/"


@pytest.mark.parametrize(
    ("scope", "url", "inside"),
    [
        ("host", "https://example.com/anything/deep", True),
        ("host", "https://www.example.com/", False),
        ("host", "http://example.com:8080/", False),
        ("domain", "https://docs.example.com/x", True),
        ("domain", "https://example.com/x", True),
        ("domain", "https://a.b.example.com/x", True),
        ("domain", "https://notexample.com/x", False),
        ("domain", "https://example.org/x", False),
        ("path", "https://www.example.com/docs", True),
        ("path", "https://www.example.com/docs/v2/intro", True),
        ("path", "https://www.example.com/docs-old/intro", False),
        ("path", "https://www.example.com/blog", False),
        ("path", "https://docs.example.com/docs/intro", False),
    ],
)
def test_scope(scope, url, inside):
    start = {"host": "https://example.com/", "domain": "https://www.example.com/"}.get(scope, DOCS)
    decision = CrawlScope.of(start, scope=scope).decide(normalize_url(url), 1)
    assert decision.queued is inside
    assert decision.reason == (None if inside else "out_of_scope")


def test_path_scope_of_a_file_covers_its_directory():
    scope = CrawlScope.of("https://example.com/docs/index.html", scope="path")
    assert scope.contains("https://example.com/docs/guide")
    assert not scope.contains("https://example.com/blog")


def test_include_and_exclude_globs_decide_with_their_own_reasons():
    scope = CrawlScope.of("https://example.com/docs/", include=["/docs/**"], exclude=["**/print/**", "**?sort=*"])
    assert scope.decide("https://example.com/docs/api/v1", 1).queued
    assert scope.decide("https://example.com/docs", 0).queued
    assert scope.decide("https://example.com/blog/post", 1).reason == "not_included"
    assert scope.decide("https://example.com/docs/print/page", 1).reason == "excluded"
    assert scope.decide("https://example.com/docs/list?sort=asc", 1).reason == "excluded"


def test_an_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope must be one of host, domain, path"):
        CrawlScope.of("https://example.com/", scope="site")


# The frontier: duplicates, depth, limits, traps


def test_a_url_is_fetched_as_found_and_a_trailing_slash_makes_no_other_page():
    frontier = frontier_for()
    first = frontier.offer("https://example.com/held/", 0)
    assert first.queued and first.url == "https://example.com/held/"  # a page served only there is asked for there
    assert frontier.offer("https://example.com/held", 1).reason == "duplicate"
    assert frontier.offer("https://example.com/held/?utm_source=x", 1).reason == "duplicate"
    assert page_key("https://example.com/") == "https://example.com/"
    assert page_key("https://example.com/a/?q=1") == "https://example.com/a?q=1"
    assert frontier.seen_before("https://example.com/held")


def test_duplicates_collapse_including_tracking_and_fragment_variants():
    frontier = frontier_for()
    assert frontier.offer("https://example.com/", 0).queued
    variants = [
        "https://example.com/a?x=1&y=2",
        "https://example.com/a?y=2&x=1&utm_source=news",
        "https://EXAMPLE.com:443/a/?x=1&y=2#top",
        "https://example.com/a?fbclid=abc&x=1&y=2",
    ]
    decisions = [frontier.offer(url, 1, "https://example.com/") for url in variants]
    assert [decision.reason for decision in decisions] == [None, "duplicate", "duplicate", "duplicate"]
    assert frontier.page_count() == 2


def test_max_depth():
    frontier = frontier_for(max_depth=2)
    assert frontier.offer("https://example.com/a", 2).queued
    assert frontier.offer("https://example.com/b", 3).reason == "depth"


def test_max_pages_is_exact():
    frontier = frontier_for(max_pages=10)
    decisions = [frontier.offer(f"https://example.com/page/{n}", 1) for n in range(25)]
    assert sum(decision.queued for decision in decisions) == 10
    assert {decision.reason for decision in decisions[10:]} == {"limit"}
    # Done pages still count: finishing some frees no room.
    for _ in range(3):
        entry = frontier.next_ready(now=0)
        frontier.report(entry.url, 200, now=0)
    assert frontier.offer("https://example.com/more", 1).reason == "limit"
    assert frontier.page_count() == 10


def test_a_calendar_of_ever_new_query_strings_is_capped_as_a_trap():
    frontier = frontier_for(max_pages=100_000, max_depth=100_000)
    decisions = [frontier.offer(f"https://example.com/calendar?month={n}", n) for n in range(1, 10_001)]
    queued = [decision for decision in decisions if decision.queued]
    assert len(queued) == DEFAULT_TEMPLATE_CAP
    assert {decision.reason for decision in decisions if not decision.queued} == {"trap"}
    # Another template on the same site is not affected, and digit runs in the path share a template.
    assert frontier.offer("https://example.com/events?day=1", 1).queued
    cap_ten = frontier_for(template_cap=10)
    years = [cap_ten.offer(f"https://example.com/cal/{2000 + n}?month=1", 1) for n in range(20)]
    assert [decision.reason for decision in years].count("trap") == 10


def test_the_same_calendar_as_paths_ends_at_max_depth():
    frontier = frontier_for(max_depth=5, max_pages=1000)
    month, depth = 0, 0
    while frontier.offer(f"https://example.com/calendar/2024/{month}", depth).queued:
        month, depth = month + 1, depth + 1
    assert frontier.offer(f"https://example.com/calendar/2024/{month}", depth).reason == "depth"
    assert frontier.page_count() == 6


def test_each_skip_reason_of_the_fixed_vocabulary():
    frontier = frontier_for(
        robots=ROBOTS_TXT,
        max_pages=3,
        max_depth=2,
        template_cap=1,
        include=["/a/**", "/private/**", "/x/**"],
        exclude=["/x/**"],
    )
    offers = [
        ("https://example.com/", 0, None),
        ("https://other.org/", 1, "out_of_scope"),
        ("https://example.com/x/1", 1, "excluded"),
        ("https://example.com/b", 1, "not_included"),
        ("https://example.com/a/deep", 3, "depth"),
        ("https://example.com/#top", 1, "duplicate"),
        ("https://example.com/private/keys", 1, "robots"),
        ("https://example.com/a/list?page=1", 1, None),
        ("https://example.com/a/list?page=2", 1, "trap"),
        ("https://example.com/a/c", 1, None),
        ("https://example.com/a/" + "x" * 2048, 1, "too_long"),
        ("https://example.com/a/d", 1, "limit"),
    ]
    assert [frontier.offer(url, depth).reason for url, depth, _ in offers] == [reason for _, _, reason in offers]
    assert set(SKIP_REASONS) == {reason for _, _, reason in offers} - {None}


# Robots


def test_robots_disallow_and_crawl_delay_for_our_user_agent():
    robots = RobotsRules.parse(ROBOTS_TXT)
    assert robots.allowed("https://example.com/docs/intro", UA)
    assert not robots.allowed("https://example.com/private/keys", UA)
    assert robots.allowed("https://example.com/private/public-note", UA)
    assert not robots.allowed("https://example.com/search?q=x", UA)
    assert not robots.allowed("https://example.com/docs", "Googlebot")
    assert robots.crawl_delay(UA) == 5.0
    assert robots.sitemaps() == ["https://example.com/sitemap_index.xml", "https://example.com/news-sitemap.xml.gz"]


def test_the_frontier_skips_what_robots_disallows_and_waits_its_crawl_delay():
    frontier = frontier_for(robots=ROBOTS_TXT, delay_ms=1000)
    assert frontier.offer("https://example.com/private/keys", 1).reason == "robots"
    assert frontier.offer("https://example.com/a", 1).queued
    assert frontier.delay_seconds("https://example.com/a") == 5.0


def test_a_url_cannot_be_offered_before_its_robots_is_known():
    frontier = frontier_for(scope="domain")
    assert frontier.robots_needed("https://docs.example.com/x") == "https://docs.example.com/robots.txt"
    with pytest.raises(LookupError, match=r"https://docs\.example\.com/robots\.txt"):
        frontier.offer("https://docs.example.com/x", 1)
    frontier.learn_robots("https://docs.example.com/robots.txt", RobotsRules.from_response(404))
    assert frontier.robots_needed("https://docs.example.com/x") is None
    assert frontier.offer("https://docs.example.com/x", 1).queued


def test_robots_by_status_follow_rfc_9309():
    assert RobotsRules.from_response(404).allowed("https://example.com/a", UA)
    assert not RobotsRules.from_response(503).allowed("https://example.com/a", UA)
    assert not RobotsRules.from_response(None).allowed("https://example.com/a", UA)
    assert not RobotsRules.from_response(200, ROBOTS_TXT).allowed("https://example.com/private/a", UA)


# Pages: links and canonical


PAGE = """<!doctype html><html><head>
<link rel="alternate" href="/feed">
<link rel="Canonical" href="/docs/guide/?utm_source=feed">
</head><body>
<a href="intro#install">Install</a>
<a href="/docs/intro">Intro again</a>
<a href="https://other.org/x" rel="nofollow">Sponsor</a>
<a href="mailto:team@example.com">Mail</a>
<a href="javascript:void(0)">Menu</a>
<a href="tel:+4912345">Call</a>
<a>No href</a>
<map><area href="/map/region"></map>
</body></html>"""


def test_links_are_absolute_normalised_once_each_and_only_web_pages():
    assert links_of(PAGE, "https://example.com/docs/guide") == [
        "https://example.com/docs/intro",
        "https://other.org/x",
        "https://example.com/map/region",
    ]


def test_links_honour_base_href():
    page = '<html><head><base href="https://cdn.example.com/v2/"></head><body><a href="a">a</a></body></html>'
    assert links_of(page, "https://example.com/docs/") == ["https://cdn.example.com/v2/a"]


def test_a_base_href_that_is_not_a_url_is_ignored_as_browsers_do():
    # An unclosed IPv6 literal: links and the canonical link resolve against the page's own URL.
    page = (
        '<html><head><base href="http://[::1/v2/"><link rel="canonical" href="guide"></head>'
        '<body><a href="a">a</a></body></html>'
    )
    assert links_of(page, "https://example.com/docs/") == ["https://example.com/docs/a"]
    assert canonical_of(page, "https://example.com/docs/") == "https://example.com/docs/guide"


def test_canonical_link():
    assert canonical_of(PAGE, "https://example.com/docs/guide?ref=x") == "https://example.com/docs/guide/"
    assert canonical_of("<html><body>no head</body></html>", "https://example.com/") is None
    assert canonical_of("", "https://example.com/") is None
    assert links_of("", "https://example.com/") == []


def test_a_canonical_link_counts_in_the_head_only():
    body_only = '<html><head><title>t</title></head><body><link rel="canonical" href="/other"></body></html>'
    assert canonical_of(body_only, "https://example.com/page") is None
    assert links_and_canonical(body_only, "https://example.com/page")[1] is None
    in_head = '<html><head><link rel="canonical" href="/guide"></head><body><a href="/x">x</a></body></html>'
    assert canonical_of(in_head.encode(), "https://example.com/guide?utm_source=a") == "https://example.com/guide"
    assert links_and_canonical(in_head, "https://example.com/page") == (
        ["https://example.com/x"],
        "https://example.com/guide",
    )


def test_a_page_whose_canonical_was_seen_is_a_duplicate():
    frontier = frontier_for()
    frontier.offer("https://example.com/guide", 1)
    frontier.offer("https://example.com/guide-print", 1)
    assert frontier.note_canonical("https://example.com/guide-print", "https://example.com/guide/").reason == (
        "duplicate"
    )
    assert frontier.note_canonical("https://example.com/a", "https://example.com/b").queued
    assert frontier.offer("https://example.com/b", 1).reason == "duplicate"


# Sitemaps


URLSET = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://example.com/</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc> https://example.com/docs/?utm_source=sitemap </loc></url>
  <url><loc>ftp://example.com/file</loc></url>
</urlset>"""
INDEX = b"""<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://example.com/sitemap-docs.xml</loc></sitemap>
  <sitemap><loc>https://example.com/sitemap-blog.xml.gz</loc></sitemap>
</sitemapindex>"""


def test_sitemap_urlset_and_index():
    assert parse_sitemap(URLSET) == (["https://example.com/", "https://example.com/docs/"], [])
    assert parse_sitemap(INDEX) == (
        [],
        ["https://example.com/sitemap-docs.xml", "https://example.com/sitemap-blog.xml.gz"],
    )


def test_sitemap_gzip_and_without_namespace_and_as_text():
    assert parse_sitemap(gzip.compress(URLSET))[0] == ["https://example.com/", "https://example.com/docs/"]
    assert parse_sitemap(b"<urlset><url><loc>https://example.com/a</loc></url></urlset>") == (
        ["https://example.com/a"],
        [],
    )
    assert parse_sitemap(b"https://example.com/a\nhttps://example.com/b\n") == (
        ["https://example.com/a", "https://example.com/b"],
        [],
    )


def test_malformed_sitemaps_give_what_can_be_read():
    truncated = URLSET[: URLSET.index(b"<url><loc> https")]
    assert parse_sitemap(truncated) == (["https://example.com/"], [])
    assert parse_sitemap(b"<<<not xml at all") == ([], [])
    assert parse_sitemap(b"") == ([], [])
    assert parse_sitemap(b"\x1f\x8b broken gzip") == ([], [])


def test_sitemap_entities_are_never_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("https://example.com/leaked")
    xxe = f"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY leak SYSTEM "file://{secret}">]>
<urlset><url><loc>&leak;</loc></url><url><loc>https://example.com/ok</loc></url></urlset>""".encode()
    assert parse_sitemap(xxe) == (["https://example.com/ok"], [])


def test_a_sitemap_is_read_up_to_the_protocol_limit():
    locs = b"".join(b"<url><loc>https://example.com/p/%d</loc></url>" % n for n in range(MAX_SITEMAP_URLS + 10))
    pages, _ = parse_sitemap(b"<urlset>" + locs + b"</urlset>")
    assert len(pages) == MAX_SITEMAP_URLS


# Politeness


def test_two_urls_on_one_host_with_a_delay_are_not_both_ready_at_once():
    frontier = frontier_for(delay_ms=2000, per_host_concurrency=4)
    frontier.offer("https://example.com/a", 1)
    frontier.offer("https://example.com/b", 1)
    first = frontier.next_ready(now=100.0)
    assert first.url == "https://example.com/a"
    assert frontier.next_ready(now=100.0) is None
    assert frontier.next_ready(now=101.9) is None
    assert frontier.next_start_time() == 102.0
    assert frontier.next_ready(now=102.0).url == "https://example.com/b"


def test_per_host_concurrency_limits_fetches_in_flight_and_other_hosts_go_on():
    frontier = frontier_for(scope="domain", per_host_concurrency=1)
    frontier.learn_robots("https://docs.example.com/robots.txt", RobotsRules.parse(""))
    for url in ("https://example.com/a", "https://example.com/b", "https://docs.example.com/c"):
        frontier.offer(url, 1)
    assert frontier.next_ready(now=0).url == "https://example.com/a"
    assert frontier.next_ready(now=0).url == "https://docs.example.com/c"
    assert frontier.next_ready(now=0) is None
    frontier.report("https://example.com/a", 200, now=1)
    assert frontier.next_ready(now=1).url == "https://example.com/b"


def test_a_loaded_page_frees_its_hosts_place_once():
    frontier = frontier_for(per_host_concurrency=1)
    for path in ("/a", "/b", "/c"):
        frontier.offer("https://example.com" + path, 1)
    assert frontier.next_ready(now=0).url == "https://example.com/a"
    assert frontier.next_ready(now=0) is None
    frontier.release("https://example.com/a")  # loaded; still being converted and recorded
    assert frontier.next_ready(now=0).url == "https://example.com/b"
    frontier.release("https://example.com/a")
    frontier.report("https://example.com/a", 200, now=1)  # does not free /b's place a second time
    assert frontier.next_ready(now=1) is None
    assert frontier.counts_by_status() == {"queued": 1, "in_flight": 1, "200": 1}
    frontier.report("https://example.com/b", 200, now=2)
    assert frontier.next_ready(now=2).url == "https://example.com/c"


def test_429_with_retry_after_delays_that_host_only_and_queues_the_url_again():
    frontier = frontier_for(scope="domain", per_host_concurrency=2)
    frontier.learn_robots("https://docs.example.com/robots.txt", RobotsRules.parse(""))
    for url in ("https://example.com/a", "https://example.com/b", "https://docs.example.com/c"):
        frontier.offer(url, 1)
    limited = frontier.next_ready(now=0)
    assert frontier.report(limited.url, 429, retry_after="30", now=10) is True
    assert frontier.next_ready(now=11).url == "https://docs.example.com/c"
    assert frontier.next_ready(now=39.9) is None
    retried = frontier.next_ready(now=40)
    assert (retried.url, retried.attempts) == ("https://example.com/a", 1)
    assert frontier.next_ready(now=40).url == "https://example.com/b"


def test_a_host_whose_queued_urls_were_marked_done_sets_no_start_time():
    frontier = frontier_for(scope="domain", delay_ms=5000)
    frontier.learn_robots("https://docs.example.com/robots.txt", RobotsRules.parse(""))
    frontier.offer("https://example.com/a", 1)
    frontier.offer("https://docs.example.com/b", 1)
    assert frontier.next_ready(now=10).url == "https://example.com/a"
    frontier.mark_done("https://docs.example.com/b", 200)
    assert frontier.next_start_time() is None
    assert frontier.next_ready(now=10) is None
    frontier.report("https://example.com/a", 200, now=11)
    assert frontier.is_finished()


def test_503_without_retry_after_backs_off_exponentially_then_gives_up():
    frontier = frontier_for(max_retries=2)
    frontier.offer("https://example.com/a", 1)
    now, waits = 0.0, []
    while (entry := frontier.next_ready(now)) is not None:
        requeued = frontier.report(entry.url, 503, now=now)
        next_start = frontier.next_start_time() if requeued else frontier.hosts["example.com"].next_start
        waits.append(next_start - now)
        now = next_start
    assert waits == [2.0, 4.0, 8.0]
    assert frontier.done == {"https://example.com/a": 503}
    assert frontier.is_finished()


def test_retry_after_as_an_http_date():
    now = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC).timestamp()
    assert retry_after_seconds(format_datetime(datetime(2026, 5, 1, 12, 2, 0, tzinfo=UTC), usegmt=True), now) == 120
    assert retry_after_seconds("999999", now) == 600
    assert retry_after_seconds("soon", now) is None


# Resume


def test_a_restored_frontier_resumes_without_fetching_a_page_twice():
    frontier = frontier_for(robots=ROBOTS_TXT, max_pages=5)
    for path in ("/", "/a", "/b", "/c"):
        frontier.offer("https://example.com" + path, 1)
    fetched = []
    for now in (0, 5):
        entry = frontier.next_ready(now)
        fetched.append(entry.url)
        frontier.report(entry.url, 200, now=now)
    in_flight_at_crash = frontier.next_ready(now=10).url
    state = json.loads(json.dumps(frontier.snapshot()))

    resumed = frontier_for(robots="", max_pages=5)
    resumed.restore(state)
    assert resumed.offer("https://example.com/a?utm_source=x", 2).reason == "duplicate"
    assert resumed.offer("https://example.com/private/x", 2).reason == "robots"
    assert resumed.offer("https://example.com/d", 2).queued
    assert resumed.offer("https://example.com/e", 2).reason == "limit"
    # The crawl-delay learnt before the crash still holds; the page in flight then is fetched first.
    assert resumed.next_ready(now=14) is None
    now = 15.0
    while not resumed.is_finished():
        entry = resumed.next_ready(now)
        if entry:
            fetched.append(entry.url)
            resumed.report(entry.url, 200, now=now)
        now += 5
    assert fetched[2] == in_flight_at_crash
    assert sorted(fetched) == sorted(set(fetched))
    assert len(fetched) == 5
    assert resumed.counts_by_status() == {"queued": 0, "in_flight": 0, "200": 5}


@pytest.mark.parametrize("scope", ["host", "domain", "path"])
@pytest.mark.parametrize(
    "url",
    [
        "HTTPS://WWW.EXAMPLE.COM/docs/a",
        "https://www.example.com./docs/a",
        "https://www.example.com:443/docs/b?utm_source=x",
        "https://user:pw@www.example.com/docs/c",
        "https://" + "\uff57" * 3 + ".example.com/docs/d",  # full-width letters: IDNA maps them to ASCII
        "https://docs.EXAMPLE.com/docs/e",
        "https://elsewhere.org/docs/f?next=https://www.example.com/",
        "https://elsewhere.org/docs/g",
        "https://exam-ple.com/docs/h",
    ],
)
def test_the_raw_url_precheck_never_turns_away_a_url_in_scope(scope, url):
    """could_contain spares off-site links their normalisation: it may let an off-site URL through (contains
    decides), never turn away one that is in scope."""
    crawl_scope = CrawlScope.of(DOCS, scope=scope)
    normal = normalize_url(url)
    inside = normal is not None and crawl_scope.contains(normal)
    assert crawl_scope.could_contain(url) or not inside
    if inside:
        assert crawl_scope.could_contain(url)


def test_off_site_links_are_out_of_scope_without_being_normalised():
    scope = CrawlScope.of(DOCS, scope="path")
    assert not scope.could_contain("https://elsewhere.org/docs/")
    assert not scope.could_contain("https://exam-ple.com/")
    assert scope.could_contain("https://WWW.Example.com/docs/x")
    frontier = Frontier(scope=scope, max_pages=10, respect_robots=False)
    normalize_url.cache_clear()
    assert frontier.offer("https://elsewhere.org/docs/", 1).reason == "out_of_scope"
    assert normalize_url.cache_info().currsize == 0
    assert frontier.offer("https://www.example.com/blog/", 1).reason == "out_of_scope"  # on the site: normalised
    assert normalize_url.cache_info().currsize == 1
    assert frontier.offer("https://WWW.example.com/docs/intro", 1).reason is None
