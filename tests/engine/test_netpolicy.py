"""The network policy: which destinations the service may reach, judged before any connection."""

from __future__ import annotations

import pytest

from runs.engine.netpolicy import NetworkPolicy, Refused, parse_allowlist_entry
from tests.ssrf_forms import BAD_SCHEMES, refused_urls

BLOCKING = NetworkPolicy()


@pytest.mark.parametrize("url", refused_urls(8080))
def test_non_public_destinations_are_refused(url):
    with pytest.raises(Refused) as refused:
        BLOCKING.check_url(url)
    assert refused.value.code == "url_not_allowed"
    assert "ALLOW_PRIVATE_NETWORKS" in str(refused.value)


def test_there_are_at_least_thirty_forms():
    assert len(refused_urls(8080)) >= 30


@pytest.mark.parametrize("url", BAD_SCHEMES)
def test_only_http_and_https_are_fetched(url):
    with pytest.raises(Refused, match="Only http:// and https://"):
        NetworkPolicy(allow_private=True).check_url(url)


@pytest.mark.parametrize(
    "url", ["http://93.184.216.34/", "https://8.8.8.8:8443/x", "http://[2606:4700:4700::1111]/", "http://1.1.1.1./"]
)
def test_public_addresses_pass(url):
    BLOCKING.check_url(url)


def test_unresolvable_names_are_dns_errors():
    with pytest.raises(Refused) as refused:
        BLOCKING.check_url("http://no-such-host.invalid/")
    assert refused.value.code == "dns_error"


def test_allow_private_lets_everything_through_but_other_schemes():
    policy = NetworkPolicy(allow_private=True)
    for url in refused_urls(8080):
        policy.check_url(url)


def test_the_allowlist_opens_exactly_the_listed_destinations():
    policy = NetworkPolicy(allowlist=("127.0.0.1:8080", "10.0.0.0/8", "[::1]:9000"))
    policy.check_url("http://127.0.0.1:8080/")
    policy.check_url("http://2130706433:8080/")  # the same address written otherwise
    policy.check_url("http://10.20.30.40/")
    policy.check_url("http://[::1]:9000/")
    for url in ("http://127.0.0.1:8081/", "http://192.168.0.1/", "http://[::1]:9001/", "http://169.254.169.254/"):
        with pytest.raises(Refused):
            policy.check_url(url)


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "not-an-address", "127.0.0.1:0", "127.0.0.1:99999", "[::1]:x"])
def test_malformed_allowlist_entries_are_errors(entry):
    with pytest.raises(ValueError):
        parse_allowlist_entry(entry)


# The IANA special-purpose blocks that Python's ipaddress.is_global judged differently before the CVE-2024-4032 fix
# (this machine's Python 3.11.7 among them), and their neighbours: the policy's own table decides, whatever the
# Python patch level.
@pytest.mark.parametrize(
    "address",
    [
        "192.0.0.192",  # IETF protocol assignments: a cloud metadata address
        "192.0.0.1",
        "100.64.0.1",  # carrier-grade NAT
        "100.127.255.254",
        "198.18.0.1",  # benchmarking
        "198.19.255.255",
        "240.0.0.1",  # reserved
        "255.255.255.255",
        "192.88.99.1",  # deprecated 6to4 relays
        "[fec0::1]",  # site-local
        "[64:ff9b::7f00:1]",  # NAT64 of 127.0.0.1
        "[64:ff9b::a00:1]",  # NAT64 of 10.0.0.1
        "[64:ff9b:1::808:808]",  # local-use NAT64
        "[2001::1]",  # Teredo
        "[2001:db8::1]",  # documentation
        "[3fff::1]",
        "[5f00::1]",  # SRv6, outside global unicast
        "[::808:808]",  # deprecated IPv4-compatible form
        "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
    ],
)
def test_special_purpose_blocks_are_refused_whatever_python_says(address):
    with pytest.raises(Refused) as refused:
        BLOCKING.check_url(f"http://{address}/")
    assert refused.value.code == "url_not_allowed"


@pytest.mark.parametrize(
    "address",
    ["100.63.255.255", "100.128.0.1", "198.17.255.255", "198.20.0.1", "[64:ff9b::808:808]", "[2002:808:808::1]"],
)
def test_the_public_neighbours_of_those_blocks_pass(address):
    BLOCKING.check_url(f"http://{address}/")
