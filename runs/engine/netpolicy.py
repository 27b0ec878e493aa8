"""Which addresses a run may reach: public ones only, unless ALLOW_PRIVATE_NETWORKS is set."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from runs.engine.spec import EngineError


def is_private_address(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    return not ip.is_global or ip.is_multicast


def literal_private_host(host: str) -> bool:
    """True for hosts that are private without a DNS lookup (localhost, literal private IPs)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return is_private_address(host)
    except ValueError:
        return False


def check_public(url: str) -> None:
    """Resolve the URL's host and refuse it when any address is private (SSRF guard)."""
    host = urlsplit(url).hostname or ""
    if literal_private_host(host):
        raise EngineError("blocked_address", f"{host} is a private or loopback address.")
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror:
        raise EngineError("dns_error", f"The host name {host} could not be resolved.") from None
    for info in infos:
        if is_private_address(info[4][0]):
            raise EngineError("blocked_address", f"{host} resolves to a private address ({info[4][0]}).")
