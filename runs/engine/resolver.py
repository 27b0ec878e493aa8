"""Name lookups for the network policy and its guard: quick when names fail, never queued behind each other.

A news page names 20 to 60 third-party hosts, and the guard resolves every one before the browser may connect.
The system resolver (getaddrinfo) waits 5 s before it asks again when a query or its answer is lost, and a
server that drops a few of many concurrent queries is common (measured on the CI machine: 5 of 30 parallel
lookups took 5 s); behind a small thread pool, every later lookup of the page then waited too. So names are
asked of the nameservers directly, with dnspython's asyncio resolver on a thread of its own:

- A and AAAA are asked at once (a name that does not exist is known from the first NXDOMAIN), each retransmitted
  after TRY_TIMEOUT_S (a browser asks for a page's hosts in rounds, and each round waits for its slowest name),
  the whole lookup bounded by LOOKUP_TIMEOUT_S;
- while the nameservers lose queries (an answer that took TRY_TIMEOUT_S or more, in the last STRAINED_S), A is
  asked first and AAAA only for a name that exists: a name that does not exist costs one question instead of two
  (glibc's `options single-request`, taken only while it is needed). Nameservers that shed load drop queries past
  a rate (measured on the CI machine: ~60 a second with bursts of ~50 answered, the rest lost), and a page that
  loads many hosts that do not resolve lost questions and waited 0.4 s or more for each. A name that exists then
  costs one round trip more: its addresses are all still asked for;
- one lookup per name is in flight however many connections wait for it;
- answers are kept for their TTL (at most POSITIVE_MAX_S; a TTL of 0 is never kept), names that do not exist
  or have no address for NEGATIVE_S, lookups that failed (timeouts, SERVFAIL) for FAILED_S.

Keeping an answer does not weaken the guard: it still connects only to an address it has checked, and an
address a name stood for a moment ago is what the name's own TTL says it stands for. Names in /etc/hosts are
answered from there first, as the system resolver does; without a resolver configuration the system's
getaddrinfo is used (on threads enough for every lookup at once).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import dns.asyncresolver
import dns.exception
import dns.name
import dns.nameserver
import dns.resolver

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Nameservers = tuple[tuple[str, int], ...]

TRY_TIMEOUT_S = 0.4
LOOKUP_TIMEOUT_S = 3.0
POSITIVE_MAX_S = 300.0
NEGATIVE_S = 30.0
FAILED_S = 5.0
STRAINED_S = 10.0
CACHE_LIMIT = 10_000
HOSTS_FILE = "/etc/hosts"


class Resolver:
    """Resolves names to every address they stand for (empty: the name does not resolve). `nameservers`, as
    (address, port) pairs, replace /etc/resolv.conf's (and /etc/hosts); thread-safe, one per process and
    nameserver list (resolver_for)."""

    def __init__(self, nameservers: Nameservers = (), hosts_file: str = HOSTS_FILE):
        self._cache: dict[str, tuple[float, list[IPAddress]]] = {}
        self._inflight: dict[str, asyncio.Future] = {}
        self._hosts = _HostsFile(hosts_file if not nameservers else None)
        self._dns = _dns_resolver(nameservers)
        self._strained_until = 0.0  # until when (monotonic) the nameservers are taken to be losing queries
        self._threads = (
            ThreadPoolExecutor(max_workers=64, thread_name_prefix="getaddrinfo") if self._dns is None else None
        )
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, name="resolver", daemon=True).start()

    def lookup(self, name: str) -> list[IPAddress]:
        """Every address of name, blocking this thread (never the resolver's own)."""
        return asyncio.run_coroutine_threadsafe(self._lookup(name), self._loop).result()

    async def lookup_async(self, name: str) -> list[IPAddress]:
        """lookup() for a coroutine on another event loop. A name already known is answered on the caller's own
        loop (a page asks for the same few hosts dozens of times: no hop to the resolver's thread and back)."""
        known = self._known(name.rstrip(".").lower())
        if known is not None:
            return known
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._lookup(name), self._loop))

    def _known(self, name: str) -> list[IPAddress] | None:
        """The addresses of name from /etc/hosts or a fresh cached answer; None when DNS must be asked. Safe from
        any thread (a re-read of /etc/hosts from two at once reads the same file twice)."""
        in_hosts = self._hosts.addresses(name)
        if in_hosts:
            return list(in_hosts)
        cached = self._cache.get(name)
        if cached is not None and cached[0] > time.monotonic():
            return list(cached[1])
        return None

    async def _lookup(self, name: str) -> list[IPAddress]:
        name = name.rstrip(".").lower()
        known = self._known(name)
        if known is not None:
            return known
        pending = self._inflight.get(name)
        if pending is None:
            pending = self._inflight[name] = asyncio.ensure_future(self._ask(name))
            pending.add_done_callback(lambda _: self._inflight.pop(name, None))
        return list(await asyncio.shield(pending))

    async def _ask(self, name: str) -> list[IPAddress]:
        if self._dns is not None:
            addresses, ttl = await self._both(name)
        else:
            addresses = await self._loop.run_in_executor(self._threads, _getaddrinfo, name)
            ttl = NEGATIVE_S if addresses else FAILED_S  # getaddrinfo tells neither TTLs nor why a name failed
        if len(self._cache) >= CACHE_LIMIT:
            self._cache.clear()
        if ttl > 0:
            self._cache[name] = (time.monotonic() + ttl, addresses)
        return addresses

    async def _both(self, name: str) -> tuple[list[IPAddress], float]:
        """A and AAAA at once (A first while the nameservers lose queries). Every address counts (a private IPv6
        address next to a public IPv4 one must be seen), so both answers are awaited, unless one says the name does
        not exist: then neither type has records, and the other question (perhaps lost, waiting for its
        retransmission) is not waited for."""
        kinds = ("A", "AAAA")
        addresses: list[IPAddress] = []
        ttl = POSITIVE_MAX_S
        if time.monotonic() < self._strained_until:  # one question for a name that does not exist
            addresses, ttl, name_missing = await self._records(name, "A")
            if name_missing:
                return [], NEGATIVE_S
            kinds = ("AAAA",)
        pending = {asyncio.ensure_future(self._records(name, kind)) for kind in kinds}
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    found, keep_for, name_missing = task.result()
                    if name_missing:
                        return [], NEGATIVE_S
                    addresses += found
                    ttl = min(ttl, keep_for)
        finally:
            for task in pending:
                task.cancel()
        # IPv4 first, whichever answer came first: the same name gives the same list (each family in its order).
        return sorted(addresses, key=lambda address: address.version), ttl

    async def _records(self, name: str, kind: str) -> tuple[list[IPAddress], float, bool]:
        """The addresses of one record type, how long that answer may be kept, and whether the name does not
        exist (NXDOMAIN). An answer that took TRY_TIMEOUT_S or more (its question was lost and asked again, or the
        nameserver is that slow) marks the nameservers as losing queries for STRAINED_S."""
        started = time.monotonic()
        try:
            answer = await self._dns.resolve(name, kind, search=True, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN:
            return [], NEGATIVE_S, True
        except dns.resolver.NoAnswer:
            return [], NEGATIVE_S, False
        except (dns.exception.DNSException, OSError, UnicodeError, ValueError):
            return [], FAILED_S, False
        finally:
            if time.monotonic() - started >= TRY_TIMEOUT_S:
                self._strained_until = time.monotonic() + STRAINED_S
        if answer.rrset is None:
            return [], NEGATIVE_S, False
        addresses = [ipaddress.ip_address(record.address) for record in answer.rrset]
        # The lowest TTL along the chain: a CNAME with a TTL of 0 in front of an address must not be kept either.
        return addresses, min(float(answer.chaining_result.minimum_ttl), POSITIVE_MAX_S), False


def _dns_resolver(nameservers: Nameservers) -> dns.asyncresolver.Resolver | None:
    """dnspython's resolver for the given nameservers or the system's (/etc/resolv.conf); None when the system has
    no resolver configuration (then getaddrinfo answers)."""
    try:
        resolver = dns.asyncresolver.Resolver(configure=not nameservers)
    except dns.resolver.NoResolverConfiguration:
        return None
    if nameservers:
        resolver.nameservers = [dns.nameserver.Do53Nameserver(address, port) for address, port in nameservers]
        resolver.domain = dns.name.root  # not the machine's domain (from its host name): names are asked as given
    if not resolver.nameservers:
        return None
    resolver.timeout = TRY_TIMEOUT_S
    resolver.lifetime = LOOKUP_TIMEOUT_S
    return resolver


def _getaddrinfo(name: str) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))


class _HostsFile:
    """The addresses /etc/hosts gives a name, read again when the file changes."""

    def __init__(self, path: str | None):
        self._path = path
        self._stamp: float | None = None
        self._names: dict[str, list[IPAddress]] = {}

    def addresses(self, name: str) -> list[IPAddress]:
        if self._path is None:
            return []
        try:
            stamp = os.stat(self._path).st_mtime
        except OSError:
            return []
        if stamp != self._stamp:
            self._stamp, self._names = stamp, _read_hosts(self._path)
        return self._names.get(name, [])


def _read_hosts(path: str) -> dict[str, list[IPAddress]]:
    names: dict[str, list[IPAddress]] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                fields = line.split("#", 1)[0].split()
                if len(fields) < 2:
                    continue
                try:
                    address = ipaddress.ip_address(fields[0].split("%")[0])
                except ValueError:
                    continue
                for alias in fields[1:]:
                    names.setdefault(alias.rstrip(".").lower(), []).append(address)
    except OSError:
        pass
    return names


_resolvers: dict[Nameservers, Resolver] = {}
_resolvers_lock = threading.Lock()


def resolver_for(nameservers: Nameservers = ()) -> Resolver:
    """This process's resolver for a nameserver list (empty: the system's), started on first use."""
    with _resolvers_lock:
        resolver = _resolvers.get(nameservers)
        if resolver is None:
            resolver = _resolvers[nameservers] = Resolver(nameservers)
        return resolver
