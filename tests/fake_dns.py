"""A real DNS server on 127.0.0.1 (UDP, RFC 1035 wire format) standing in for the network's resolver, for the
network guard's own lookups to ask."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections import Counter

A, AAAA = 1, 28
_SETTLE = "settle.fake-dns.invalid"  # answered at once, never counted: see asked()


class FakeDns:
    """A DNS server on 127.0.0.1 that counts every query it gets per (name, type), lost ones too.

    answer(name, *script, ttl, delay): the n-th query of a type for name since this call gets the addresses of that
    type in the n-th entry of the script (the last one repeats; a type with no address gets an empty NOERROR
    answer), with that TTL, sent `delay` seconds after the query. A and AAAA are counted apart (a lookup asks both
    at once, in either order), and start again from 0 at every answer() for the name. Other names: NXDOMAIN.
    lossy: the first query for each name and type gets no answer at all, like a resolver that lost it.
    silent: the record types (A, AAAA) whose queries never get an answer."""

    def __init__(self, *, lossy: bool = False, silent: tuple[int, ...] = ()) -> None:
        self.lossy = lossy
        self.silent = silent
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.records: dict[str, tuple[list[list[str]], int, float]] = {}
        self.queries: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def nameserver(self) -> str:
        return f"127.0.0.1:{self.port}"

    def answer(self, name: str, *script: list[str], ttl: int = 60, delay: float = 0.0) -> None:
        with self._lock:
            self.records[name] = (list(script) or [[]], ttl, delay)
            for kind in (A, AAAA):
                self.queries.pop((name, kind), None)

    def asked(self, name: str, kind: int = A) -> int:
        """Queries for (name, kind) so far, counting every one sent before this call: a lookup may return on A's
        NXDOMAIN with its AAAA question sent but not yet read here, so a question of our own is sent and answered
        first (the socket reads in order of arrival)."""
        self._settle()
        with self._lock:
            return self.queries[(name, kind)]

    def _settle(self) -> None:
        query = b"\x00\x01\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
        query += b"".join(bytes([len(label)]) + label.encode() for label in _SETTLE.split(".")) + b"\x00"
        query += struct.pack("!HH", A, 1)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.settimeout(5)
            probe.sendto(query, ("127.0.0.1", self.port))
            probe.recv(512)

    def close(self) -> None:
        self.socket.close()

    def _serve(self) -> None:
        while True:
            try:
                query, client = self.socket.recvfrom(4096)
            except OSError:
                return
            name, kind, question = _question(query)
            if name == _SETTLE:
                self._send(_reply(query[:2], question, kind, None, 0), client)
                continue
            with self._lock:
                self.queries[(name, kind)] += 1
                count = self.queries[(name, kind)]
                script, ttl, delay = self.records.get(name, (None, 0, 0.0))
            if (self.lossy and count == 1) or kind in self.silent:
                continue
            addresses = None if script is None else script[min(count, len(script)) - 1]
            reply = _reply(query[:2], question, kind, addresses, ttl)
            if delay:
                threading.Timer(delay, self._send, (reply, client)).start()
            else:
                self._send(reply, client)

    def _send(self, reply: bytes, client) -> None:
        with contextlib.suppress(OSError):  # closed meanwhile
            self.socket.sendto(reply, client)


def _question(query: bytes) -> tuple[str, int, bytes]:
    labels, offset = [], 12
    while query[offset]:
        labels.append(query[offset + 1 : offset + 1 + query[offset]].decode())
        offset += 1 + query[offset]
    kind = struct.unpack("!H", query[offset + 1 : offset + 3])[0]
    return ".".join(labels).lower(), kind, query[12 : offset + 5]


def _reply(query_id: bytes, question: bytes, kind: int, addresses: list[str] | None, ttl: int) -> bytes:
    if addresses is None:
        return query_id + struct.pack("!HHHHH", 0x8183, 1, 0, 0, 0) + question  # NXDOMAIN
    records = []
    for address in addresses:
        family, record_type = (socket.AF_INET6, AAAA) if ":" in address else (socket.AF_INET, A)
        if record_type == kind:
            data = socket.inet_pton(family, address)
            records.append(struct.pack("!HHHIH", 0xC00C, record_type, 1, ttl, len(data)) + data)
    return query_id + struct.pack("!HHHHH", 0x8180, 1, len(records), 0, 0) + question + b"".join(records)
