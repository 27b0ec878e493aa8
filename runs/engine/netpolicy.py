"""Which addresses the service may reach on a user's behalf: public ones only, unless told otherwise.

A URL is judged by the addresses its host stands for: literal IPv4 in every form browsers accept (decimal
2130706433, hex 0x7f.1, octal 0177.0.0.1, short 127.1), IPv6 literals (including IPv4-mapped and other
IPv6 forms that embed an IPv4 address), and DNS names, whose every resolved address must be public.
This check gives early, clear errors; the connection-time enforcement (redirects, DNS rebinding, every
sub-request of a page) is runs/engine/netguard.py, which connects only to addresses this policy permits.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 ranges that carry an IPv4 address in their low 32 bits: NAT64 (well-known and local-use prefixes) and
# the deprecated IPv4-compatible form. IPv4-mapped, 6to4 and Teredo have accessors of their own.
_EMBEDS_IPV4 = (
    ipaddress.ip_network("64:ff9b::/96"),
    ipaddress.ip_network("64:ff9b:1::/48"),
    ipaddress.ip_network("::/96"),
)


class Refused(Exception):
    """The policy forbids this destination (code url_not_allowed) or its name does not resolve (dns_error);
    the message is one sentence for the user."""

    def __init__(self, message: str, code: str = "url_not_allowed"):
        super().__init__(message)
        self.code = code


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


def embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if address.version == 4:
        return None
    if address.ipv4_mapped:
        return address.ipv4_mapped
    if address.sixtofour:
        return address.sixtofour
    if address.teredo:
        return address.teredo[1]
    if any(address in network for network in _EMBEDS_IPV4) and address != ipaddress.IPv6Address("::"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """Globally routable unicast, and so is any IPv4 address it embeds (::ffff:127.0.0.1 is loopback)."""
    if not address.is_global or address.is_multicast:
        return False
    inner = embedded_ipv4(address)
    return inner is None or is_public(inner)


@dataclass(frozen=True)
class NetworkPolicy:
    """allow_private: reach everything (tests, trusted intranets). allowlist: private destinations that stay
    reachable anyway, as "10.0.0.5", "10.0.0.0/8" or either with ":port" ("127.0.0.1:8080", "[::1]:8080").
    nameservers: DNS servers ("10.0.0.2", "127.0.0.1:5353") that answer the guard's lookups instead of the
    system's resolver (a filtering resolver, a split-horizon DNS); tried in order."""

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
        literal = parse_literal(host)
        if literal is not None:
            addresses = [literal]
        elif _is_localhost_name(host):  # browsers resolve these to loopback without asking DNS
            addresses = [ipaddress.IPv4Address("127.0.0.1")]
        else:
            addresses = self.resolve(host)
        for address in addresses:
            if not self.permits(address, port):
                where = "is" if literal is not None else f"resolves to {address}, which is"
                raise Refused(
                    f"{host} {where} a private, loopback or otherwise non-public address; "
                    "set ALLOW_PRIVATE_NETWORKS=true or list it in NETWORK_ALLOWLIST to reach it."
                )
        return str(addresses[0])

    def resolve(self, host: str) -> list[IPAddress]:
        """Every address a DNS name stands for, from the configured nameservers or the system's resolver."""
        name = host.rstrip(".")
        try:
            if self.nameservers:
                addresses = dns_lookup(name, self.nameservers)
            else:
                infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
                addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
        except (OSError, UnicodeError, ValueError):
            addresses = []
        if not addresses:
            raise Refused(f"The host name {host} could not be resolved.", "dns_error")
        return addresses

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


DNS_TIMEOUT_S = 3.0
_A, _AAAA, _IN = 1, 28, 1


def dns_lookup(name: str, nameservers: tuple[str, ...]) -> list[IPAddress]:
    """The A and AAAA records of a name, asked of the first nameserver that answers (plain DNS over UDP,
    RFC 1035; the nameserver does the recursion). Empty when the name does not exist or has no address."""
    labels = [label.encode("idna") for label in name.split(".") if label]
    if not labels or any(len(label) > 63 for label in labels):
        return []
    question = b"".join(bytes([len(label)]) + label for label in labels) + b"\0"
    last_error: OSError | None = None
    for server in nameservers:
        network, port = parse_allowlist_entry(server)
        address = str(network.network_address)
        try:
            return [found for kind in (_A, _AAAA) for found in _ask(address, port or 53, question, kind)]
        except OSError as error:  # no answer (timeout, unreachable, truncated): the next nameserver
            last_error = error
    raise last_error or OSError("no nameserver")


def _ask(server: str, port: int, question: bytes, kind: int) -> list[IPAddress]:
    query_id = int.from_bytes(os.urandom(2), "big")
    # Header: id, flags (recursion desired), one question; then the question with its type and class IN.
    query = struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0) + question + struct.pack("!HH", kind, _IN)
    family = socket.AF_INET6 if ":" in server else socket.AF_INET
    deadline = time.monotonic() + DNS_TIMEOUT_S  # one bound for the question, however many strays arrive
    with socket.socket(family, socket.SOCK_DGRAM) as udp:
        udp.connect((server, port))  # the kernel drops datagrams from any other address
        udp.send(query)
        while True:
            udp.settimeout(max(deadline - time.monotonic(), 0.001))
            reply = udp.recv(4096)  # socket.timeout (an OSError) at the deadline
            if len(reply) >= 12 and struct.unpack("!H", reply[:2])[0] == query_id:
                break  # anything else is a stray or spoofed datagram
    try:
        return _addresses(reply, kind)
    except (struct.error, ValueError):
        raise OSError("malformed DNS answer") from None


def _addresses(reply: bytes, kind: int) -> list[IPAddress]:
    flags, questions, answers = struct.unpack("!HHH", reply[2:8])
    if flags & 0x0200:
        raise OSError("the DNS answer was truncated")
    if flags & 0x000F:  # NXDOMAIN, SERVFAIL, REFUSED...: no addresses
        return []
    offset = 12
    for _ in range(questions):
        offset = _skip_name(reply, offset) + 4
    found: list[IPAddress] = []
    for _ in range(answers):
        offset = _skip_name(reply, offset)
        record_type, record_class, _ttl, length = struct.unpack("!HHIH", reply[offset : offset + 10])
        data = reply[offset + 10 : offset + 10 + length]
        offset += 10 + length
        # CNAME records come first in a resolver's answer; the addresses they lead to follow.
        if record_class == _IN and record_type == kind == _A and length == 4:
            found.append(ipaddress.IPv4Address(data))
        elif record_class == _IN and record_type == kind == _AAAA and length == 16:
            found.append(ipaddress.IPv6Address(data))
    return found


def _skip_name(message: bytes, offset: int) -> int:
    """The offset just past a (possibly compressed) domain name."""
    while True:
        if offset >= len(message):
            raise OSError("malformed DNS answer")
        length = message[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length


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
