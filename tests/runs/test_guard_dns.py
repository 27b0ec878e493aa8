"""The network guard's own DNS lookups (runs/engine/resolver.py): quick when names fail or a query is lost, one
lookup per name in flight, answers kept for their TTL, /etc/hosts first, and NETWORK_DNS_SERVERS reaching the
workers' guard.

The issue: a news page names dozens of third-party hosts, the guard resolves each before the browser may connect,
and a resolver that loses a query made getaddrinfo wait 5 s before asking again; behind a small thread pool every
later lookup of the page waited too. A real DNS server on loopback (UDP, RFC 1035 wire format) stands in for the
network's resolver; it counts every query it gets, and can lose the first query for each name and type.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dns.nameserver
import dns.resolver
import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy, Refused
from runs.engine.resolver import LOOKUP_TIMEOUT_S, Resolver
from runs.engine.spec import FetchOptions, FetchSpec, NullRecorder
from tests.fake_dns import AAAA, A, FakeDns
from tests.live import LiveService

# The acceptance bound: a page whose 20 hosts do not resolve, on a resolver that loses a query for each,
# is read within 2 s (the old getaddrinfo path waited 5 s for every lost query).
PAGE_WITHIN_S = 2.0
LOOKUP_WITHIN_S = 2.0


def unique(label: str) -> str:
    """A name no earlier test (nor an earlier run in this process) asked for: the resolver's caches cannot help."""
    return f"{label}-{uuid.uuid4().hex[:12]}.test"


PLAIN_PAGE = "<!doctype html><html><head><title>Plain</title></head><body><p>Nothing else.</p></body></html>"


class Site:
    """An HTTP server on one loopback address serving pages by path (404 for others), keeping the paths of the
    pages asked for."""

    def __init__(self, address: str, pages: dict[str, str]) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path not in pages:
                    self.send_error(404)
                    return
                hits.append(self.path)
                body = pages[self.path].encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.server.daemon_threads = True
        self.address, self.port = address, self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_dns():
    server = FakeDns()
    yield server
    server.close()


@pytest.fixture
def lossy_dns():
    server = FakeDns(lossy=True)
    yield server
    server.close()


def embedding_page(hosts: list[str]) -> str:
    """A page whose 20 resources each live on a host of their own (every fourth over https, a CONNECT tunnel through
    the guard): stylesheets in the head; frames, scripts and images in the body.

    Laid out so that Chromium asks for all 20 at once, as it does on a page whose resources its preload scanner
    finds together: it holds back low-priority requests (images, scripts after the first image) beyond 10 per page,
    and images while scripts in the head block the parser; such a page loads in rounds, each of which a lost query
    costs a retransmission of its own."""
    tags = {"css": [], "frame": [], "js": [], "img": []}
    kinds = ["css"] * 6 + ["js"] * 6 + ["img"] * 6 + ["frame"] * 2
    for index, (host, kind) in enumerate(zip(hosts, kinds, strict=True)):
        base = f"{'https' if index % 4 == 3 else 'http'}://{host}"
        tags[kind].append(
            {
                "css": f'<link rel="stylesheet" href="{base}/site.css">',
                "frame": f'<iframe src="{base}/ad"></iframe>',
                "js": f'<script src="{base}/app.js"></script>',
                "img": f'<img src="{base}/photo.jpg" alt="">',
            }[kind]
        )
    return (
        f"<!doctype html><html><head><title>Many hosts</title>{''.join(tags['css'])}</head><body><main>"
        "<h1>Many hosts</h1><p>The article itself comes from the first-party server.</p>"
        f"{''.join(tags['frame'] + tags['js'] + tags['img'])}</main></body></html>"
    )


def test_a_page_embedding_20_unresolvable_hosts_on_a_lossy_resolver_is_read_within_2_seconds(lossy_dns, browser):
    hosts = [unique(f"r{index}") for index in range(20)]
    # The same page with its 20 resources on private addresses, refused without any lookup: what the page costs
    # on this machine right now when names cost nothing. A loaded machine (CI, other tests) stretches the bound.
    private = [f"10.0.0.{index + 1}" for index in range(20)]
    pages = {"/": embedding_page(hosts), "/no-lookups": embedding_page(private), "/warm-up": PLAIN_PAGE}
    site = Site("127.0.0.1", pages)
    try:
        policy = NetworkPolicy(allowlist=(f"127.0.0.1:{site.port}",), nameservers=(lossy_dns.nameserver,))
        options = FetchOptions(render="browser", timeout_ms=20_000)

        def timed_fetch(path: str) -> tuple[dict, float]:
            spec = FetchSpec(url=f"http://127.0.0.1:{site.port}{path}", options=options, network=policy)
            started = time.monotonic()
            page = fetch(spec, NullRecorder(), browser).to_dict()
            return page, time.monotonic() - started

        timed_fetch("/warm-up")  # Chromium's start-up and the guard's are not what the issue is about
        _, without_lookups = timed_fetch("/no-lookups")
        page, took = timed_fetch("/")
    finally:
        site.close()
    assert (page["status"], page["title"], page["loadState"]) == (200, "Many hosts", "load")
    assert "The article itself comes from the first-party server." in page["markdown"]
    assert site.hits == ["/warm-up", "/no-lookups", "/"]
    within = max(PAGE_WITHIN_S, 2 * without_lookups)
    assert took < within, f"the page took {took:.2f} s (without lookups: {without_lookups:.2f} s)"
    # Every host went through the guard's lookup and lost its first A and AAAA query (then got NXDOMAIN).
    # (an NXDOMAIN for one type ends the lookup: the other question's retransmission may not have been needed)
    asked_again = [host for host in hosts if max(lossy_dns.asked(host, A), lossy_dns.asked(host, AAAA)) >= 2]
    assert asked_again == hosts


def test_concurrent_lookups_of_one_name_ask_the_nameserver_once(fake_dns):
    name = unique("popular")
    # The answer comes 0.2 s after the query (before a retransmission at TRY_TIMEOUT_S, 0.4 s): all 20 lookups are
    # surely waiting while the first one is out.
    fake_dns.answer(name, ["93.184.216.34", "2606:2800:220:1::1"], ttl=60, delay=0.2)
    policy = NetworkPolicy(nameservers=(fake_dns.nameserver,))
    start = threading.Barrier(20)
    results: list[object] = []

    def lookup() -> None:
        start.wait()
        try:
            results.append(policy.resolve(name))
        except Exception as error:  # what the lookup ended with
            results.append(error)

    threads = [threading.Thread(target=lookup) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    expected = [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("2606:2800:220:1::1")]
    assert results == [expected] * 20
    assert (fake_dns.asked(name, A), fake_dns.asked(name, AAAA)) == (1, 1)


def test_an_answer_is_kept_for_its_ttl(fake_dns):
    name = unique("kept")
    fake_dns.answer(name, ["93.184.216.34", "2606:2800:220:1::1"], ttl=60)
    policy = NetworkPolicy(nameservers=(fake_dns.nameserver,))
    expected = [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("2606:2800:220:1::1")]
    assert policy.resolve(name) == expected
    assert policy.resolve(name.upper() + ".") == expected  # the same name
    assert (fake_dns.asked(name, A), fake_dns.asked(name, AAAA)) == (1, 1)


def test_an_answer_is_asked_for_again_when_its_ttl_ran_out(fake_dns):
    name = unique("short")
    fake_dns.answer(name, ["93.184.216.34", "2606:2800:220:1::1"], ttl=1)
    policy = NetworkPolicy(nameservers=(fake_dns.nameserver,))
    policy.resolve(name)
    policy.resolve(name)
    assert fake_dns.asked(name, A) == 1
    time.sleep(1.1)
    policy.resolve(name)
    assert (fake_dns.asked(name, A), fake_dns.asked(name, AAAA)) == (2, 2)


def test_an_answer_with_ttl_0_is_asked_for_every_time(fake_dns):
    name = unique("fresh")
    fake_dns.answer(name, ["93.184.216.34"], ttl=0)
    policy = NetworkPolicy(nameservers=(fake_dns.nameserver,))
    for _ in range(3):
        assert policy.resolve(name) == [ipaddress.ip_address("93.184.216.34")]
    assert fake_dns.asked(name, A) == 3


def test_a_name_that_does_not_exist_is_remembered(fake_dns):
    name = unique("missing")
    policy = NetworkPolicy(nameservers=(fake_dns.nameserver,))
    asked = []  # (A, AAAA) questions the nameserver had after each lookup
    for _ in range(2):
        with pytest.raises(Refused) as refused:
            policy.resolve(name)
        assert (refused.value.code, str(refused.value)) == ("dns_error", f"The host name {name} could not be resolved.")
        asked.append((fake_dns.asked(name, A), fake_dns.asked(name, AAAA)))
    # The second lookup asks nothing. The first asks A, and AAAA at most once: A's NXDOMAIN can end the lookup before
    # AAAA is sent, and while the nameserver is strained (a slow answer in another test, on a busy machine) AAAA is
    # asked only for a name that exists.
    assert asked[1] == asked[0]
    assert asked[0][0] == 1 and asked[0][1] <= 1


def test_a_name_that_does_not_exist_is_known_from_the_first_nxdomain():
    # The AAAA question is never answered; the A question's NXDOMAIN says the name has no records of any type, so
    # the lookup does not wait for AAAA's retransmissions until LOOKUP_TIMEOUT_S.
    server = FakeDns(silent=(AAAA,))
    try:
        name = unique("gone")
        policy = NetworkPolicy(nameservers=(server.nameserver,))
        started = time.monotonic()
        with pytest.raises(Refused) as refused:
            policy.resolve(name)
        took = time.monotonic() - started
        assert refused.value.code == "dns_error"
        assert took < LOOKUP_TIMEOUT_S / 2, f"the lookup took {took:.2f} s"
        assert server.asked(name, A) == 1
    finally:
        server.close()


def test_a_lost_query_is_asked_again_quickly(lossy_dns):
    name = unique("lost")
    lossy_dns.answer(name, ["93.184.216.34"], ttl=60)
    policy = NetworkPolicy(nameservers=(lossy_dns.nameserver,))
    started = time.monotonic()
    addresses = policy.resolve(name)
    took = time.monotonic() - started
    assert addresses == [ipaddress.ip_address("93.184.216.34")]
    assert lossy_dns.asked(name, A) == 2  # lost once, asked again
    assert took < LOOKUP_WITHIN_S, f"the lookup took {took:.2f} s"


def test_while_queries_are_being_lost_a_name_that_does_not_exist_costs_one_question(lossy_dns):
    # A nameserver that sheds load drops queries past a rate; asking A and AAAA at once for every name of a page,
    # most of which do not exist, doubles what it drops. Once a query was lost, A goes first, alone.
    policy = NetworkPolicy(nameservers=(lossy_dns.nameserver,))
    first = unique("first")
    lossy_dns.answer(first, ["93.184.216.34"], ttl=60)
    assert policy.resolve(first) == [ipaddress.ip_address("93.184.216.34")]  # its first A and AAAA were lost
    missing = unique("missing")
    with pytest.raises(Refused) as refused:
        policy.resolve(missing)
    assert refused.value.code == "dns_error"
    assert (lossy_dns.asked(missing, A), lossy_dns.asked(missing, AAAA)) == (2, 0)  # A lost once, asked again
    # A name that exists still has every address looked at: a private IPv6 address next to a public IPv4 one.
    both = unique("both")
    lossy_dns.answer(both, ["93.184.216.34", "fd00::7"], ttl=60)
    with pytest.raises(Refused) as refused:
        policy.connect_address(both, 443)
    assert refused.value.code == "url_not_allowed"
    assert "fd00::7" in str(refused.value)
    assert (lossy_dns.asked(both, A), lossy_dns.asked(both, AAAA)) == (2, 2)


def test_a_nameserver_that_has_lost_nothing_is_asked_a_and_aaaa_at_once():
    # A question is never answered: until this lookup gives up on it (LOOKUP_TIMEOUT_S), the resolver has seen no
    # loss, so AAAA was asked together with A, not after it.
    server = FakeDns(silent=(A,))
    try:
        policy = NetworkPolicy(nameservers=(server.nameserver,))
        name = unique("v6")
        server.answer(name, ["2606:2800:220:1::1"], ttl=60)
        found = []
        lookup = threading.Thread(target=lambda: found.extend(policy.resolve(name)))
        lookup.start()
        time.sleep(LOOKUP_TIMEOUT_S / 3)
        assert server.asked(name, A) >= 1  # and asked again: it is lost each time
        assert server.asked(name, AAAA) == 1
        lookup.join(LOOKUP_TIMEOUT_S + 1)
        assert found == [ipaddress.ip_address("2606:2800:220:1::1")]
    finally:
        server.close()


@pytest.fixture
def system_dns(fake_dns, monkeypatch):
    """The system's resolver configuration (/etc/resolv.conf, read by dnspython) names the fake DNS server."""

    def read_resolv_conf(resolver, _filename):
        resolver.nameservers = [dns.nameserver.Do53Nameserver("127.0.0.1", fake_dns.port)]

    monkeypatch.setattr(dns.resolver.BaseResolver, "read_resolv_conf", read_resolv_conf)
    return fake_dns


def test_a_name_in_the_hosts_file_is_answered_from_it_without_dns(system_dns, tmp_path):
    in_file, elsewhere = unique("intranet"), unique("public")
    system_dns.answer(in_file, ["93.184.216.34"])
    system_dns.answer(elsewhere, ["93.184.216.35"])
    hosts = tmp_path / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n10.1.2.3  {in_file} wiki  # the intranet wiki\nfe80::1%eth0 {in_file}\n")
    resolver = Resolver(hosts_file=str(hosts))
    assert resolver.lookup(in_file) == [ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("fe80::1")]
    assert resolver.lookup(in_file.upper() + ".") == [ipaddress.ip_address("10.1.2.3"), ipaddress.ip_address("fe80::1")]
    assert system_dns.asked(in_file, A) == system_dns.asked(in_file, AAAA) == 0
    # A name the file does not have is asked of the system's nameserver (the fake one, so the 0 above means something).
    assert resolver.lookup(elsewhere) == [ipaddress.ip_address("93.184.216.35")]
    assert system_dns.asked(elsewhere, A) == 1
    # An edited file is read again.
    hosts.write_text(f"10.9.9.9 {in_file}\n")
    stamp = hosts.stat().st_mtime + 5
    os.utime(hosts, (stamp, stamp))
    assert resolver.lookup(in_file) == [ipaddress.ip_address("10.9.9.9")]
    assert system_dns.asked(in_file, A) == 0


def test_explicit_nameservers_replace_the_hosts_file(fake_dns, tmp_path):
    name = unique("split")
    fake_dns.answer(name, ["93.184.216.34"])
    hosts = tmp_path / "hosts"
    hosts.write_text(f"10.1.2.3 {name}\n")
    resolver = Resolver(nameservers=(("127.0.0.1", fake_dns.port),), hosts_file=str(hosts))
    assert resolver.lookup(name) == [ipaddress.ip_address("93.184.216.34")]
    assert fake_dns.asked(name, A) == 1


def test_network_dns_servers_reach_the_workers_guard(fake_dns, tmp_path):
    page = (
        "<html><head><title>Split horizon</title></head><body><main><h1>Split horizon</h1>"
        "<p>Only the configured nameserver knows this host.</p></main></body></html>"
    )
    site = Site("127.0.0.2", {"/": page})
    name = unique("internal")
    fake_dns.answer(name, ["127.0.0.2"])
    service = LiveService(
        tmp_path,
        ALLOW_PRIVATE_NETWORKS="false",
        NETWORK_ALLOWLIST=f"127.0.0.2:{site.port}",
        NETWORK_DNS_SERVERS=fake_dns.nameserver,
        WORKERS="1",
    )
    try:
        service.start()
        run = service.submit({"kind": "fetch", "url": f"http://{name}:{site.port}/"})
        finished = service.wait(run["id"])
    finally:
        service.stop()
        site.close()
    assert finished["status"] == "succeeded", finished
    assert finished["result"]["title"] == "Split horizon"
    assert "Only the configured nameserver knows this host." in finished["result"]["markdown"]
    assert "/" in site.hits
    assert fake_dns.asked(name, A) >= 1
