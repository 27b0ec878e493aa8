"""Which addresses the service may reach on a user's behalf: public ones only, unless told otherwise.

A URL is judged by the addresses its host stands for: literal IPv4 in every form browsers accept (decimal
2130706433, hex 0x7f.1, octal 0177.0.0.1, short 127.1), IPv6 literals (including IPv4-mapped and other
IPv6 forms that embed an IPv4 address), and DNS names, whose every resolved address must be public.
This check gives early, clear errors; the connection-time enforcement (redirects, DNS rebinding, every
sub-request of a page) is runs/engine/netguard.py, which connects only to addresses this policy permits.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from runs.engine import telemetry
from runs.engine.resolver import IPAddress, Resolver, resolver_for

# Which addresses are public is decided from this table, not from ipaddress.is_global, whose own tables changed
# between Python patch releases (before the CVE-2024-4032 fix, 192.0.0.192, a cloud metadata address, and fec0::/10
# passed). From the IANA IPv4 and IPv6 Special-Purpose Address Registries: every block that is not globally
# reachable, and some that are but have no business being fetched (6to4 relays, the whole IETF protocol block).
_IPV4_NOT_PUBLIC = tuple(
    ipaddress.ip_network(block)
    for block in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata at 169.254.169.254)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments (cloud metadata at 192.0.0.192)
        "192.0.2.0/24",  # documentation (TEST-NET-1)
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation (TEST-NET-2)
        "203.0.113.0/24",  # documentation (TEST-NET-3)
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the limited broadcast address
    )
)
# IPv6: only global unicast (2000::/3) can be public, minus these blocks; IPv4-mapped, NAT64 (64:ff9b::/96) and
# 6to4 addresses are judged by the IPv4 address they carry.
_IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
_IPV6_NOT_PUBLIC = tuple(
    ipaddress.ip_network(block)
    for block in (
        "2001::/23",  # IETF protocol assignments, Teredo (2001::/32) included
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")


class Refused(Exception):
    """The policy forbids this destination (code url_not_allowed) or its name does not resolve (dns_error);
    the message is one sentence for the user."""

    def __init__(self, message: str, code: str = "url_not_allowed"):
        super().__init__(message)
        self.code = code
        telemetry.report("guard_refused", code)  # made only to be raised: each one is a refusal


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a URL host denotes under the WHATWG URL rules browsers follow, or None for a name."""
    parts = host.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    numbers = []
    for part in parts:
        try:
            if part[:2].lower() == "0x":
                numbers.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                numbers.append(int(part[1:], 8))
            elif part.isdigit():
                numbers.append(int(part, 10))
            else:
                return None
        except ValueError:
            return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def parse_literal(host: str) -> IPAddress | None:
    """The address of a literal host ("[::1]", "127.1", "0x7f000001"), or None for a DNS name."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host)
        except ValueError:
            return None
    return parse_ipv4(host)


def is_public(address: IPAddress) -> bool:
    """Globally reachable unicast by the special-purpose tables above; an IPv6 address that carries an IPv4 one
    (::ffff:127.0.0.1, 64:ff9b::7f00:1, 2002:7f00:1::) is as public as the address it carries."""
    if address.version == 4:
        return not any(address in block for block in _IPV4_NOT_PUBLIC)
    if address.ipv4_mapped is not None:
        return is_public(address.ipv4_mapped)
    if address in _NAT64:
        return is_public(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address in _SIX_TO_FOUR:
        return is_public(address.sixtofour)
    return address in _IPV6_GLOBAL_UNICAST and not any(address in block for block in _IPV6_NOT_PUBLIC)


@dataclass(frozen=True)
class NetworkPolicy:
    """allow_private: reach everything (tests, trusted intranets). allowlist: private destinations that stay
    reachable anyway, as "10.0.0.5", "10.0.0.0/8" or either with ":port" ("127.0.0.1:8080", "[::1]:8080").
    nameservers: DNS servers ("10.0.0.2", "127.0.0.1:5353") that answer the guard's lookups instead of the
    system's resolver (a filtering resolver, a split-horizon DNS); tried in order. Lookups: runs/engine/resolver.py."""

    allow_private: bool = False
    allowlist: tuple[str, ...] = ()
    nameservers: tuple[str, ...] = ()

    @property
    def enforced(self) -> bool:
        return not self.allow_private

    def permits(self, address: IPAddress, port: int) -> bool:
        if self.allow_private or is_public(address):
            return True
        return any(_entry_matches(entry, address, port) for entry in self.allowlist)

    def connect_address(self, host: str, port: int) -> str:
        """Resolve host once and return an address to connect to; Refused when any address is forbidden.

        Every address must pass: a name that resolves to one public and one private address is refused, since
        the caller (or the browser) could end up on either.
        """
        addresses = _without_lookup(host)
        return self._judged(host, port, addresses if addresses is not None else self.resolve(host))

    async def connect_address_async(self, host: str, port: int) -> str:
        """connect_address() for a coroutine: the lookup waits on the resolver's thread, not on this loop."""
        addresses = _without_lookup(host)
        if addresses is None:
            addresses = _resolved(host, await self.resolver.lookup_async(host))
        return self._judged(host, port, addresses)

    def resolve(self, host: str) -> list[IPAddress]:
        """Every address a DNS name stands for, from the configured nameservers or the system's resolver."""
        return _resolved(host, self.resolver.lookup(host))

    @property
    def resolver(self) -> Resolver:
        servers = []
        for entry in self.nameservers:
            network, port = parse_allowlist_entry(entry)
            servers.append((str(network.network_address), port or 53))
        return resolver_for(tuple(servers))

    def _judged(self, host: str, port: int, addresses: list[IPAddress]) -> str:
        literal = parse_literal(host) is not None
        for address in addresses:
            if not self.permits(address, port):
                where = "is" if literal else f"resolves to {address}, which is"
                raise Refused(
                    f"{host} {where} a private, loopback or otherwise non-public address; "
                    "set ALLOW_PRIVATE_NETWORKS=true or list it in NETWORK_ALLOWLIST to reach it."
                )
        return str(addresses[0])

    def check_url(self, url: str) -> None:
        """Refuse, before any connection, a URL whose scheme or host the policy forbids (Refused)."""
        parts = urlsplit(url.strip())
        if parts.scheme.lower() not in ("http", "https"):
            raise Refused("Only http:// and https:// URLs can be fetched.")
        host = parts.hostname or ""
        if not host:
            raise Refused("The URL has no host.")
        if not self.enforced:
            return
        try:
            port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        except ValueError:
            raise Refused("The URL's port is not a number between 0 and 65535.") from None
        self.connect_address(host, port)


def _without_lookup(host: str) -> list[IPAddress] | None:
    """The address of a literal host or a localhost name (browsers resolve those to loopback without asking DNS);
    None for a name DNS must answer."""
    literal = parse_literal(host)
    if literal is not None:
        return [literal]
    if _is_localhost_name(host):
        return [ipaddress.IPv4Address("127.0.0.1")]
    return None


def _resolved(host: str, addresses: list[IPAddress]) -> list[IPAddress]:
    if not addresses:
        raise Refused(f"The host name {host} could not be resolved.", "dns_error")
    return addresses


def _is_localhost_name(host: str) -> bool:
    host = host.strip().lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost")


def literal_private_host(host: str) -> bool:
    """True for hosts that are non-public without a DNS lookup (localhost names, literal addresses)."""
    if _is_localhost_name(host):
        return True
    literal = parse_literal(host)
    return literal is not None and not is_public(literal)


def parse_allowlist_entry(entry: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int | None]:
    """ "10.0.0.0/8", "127.0.0.1:8080", "[::1]:8080" -> (network, port or None); ValueError when malformed."""
    entry = entry.strip()
    port: int | None = None
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        if rest:
            port = int(rest.removeprefix(":"))
    elif entry.count(":") == 1:
        address, port_text = entry.split(":")
        port = int(port_text)
    else:
        address = entry
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"port {port} is out of range")
    return ipaddress.ip_network(address, strict=False), port


def _entry_matches(entry: str, address: IPAddress, port: int) -> bool:
    network, entry_port = parse_allowlist_entry(entry)
    return address in network and (entry_port is None or entry_port == port)
