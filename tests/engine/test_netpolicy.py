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
