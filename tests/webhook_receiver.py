"""A webhook receiver on 127.0.0.1 for tests: records every request, answers as it is told."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: str
    at: float = field(default_factory=time.monotonic)
    wall: float = field(default_factory=time.time)


class Receiver:
    """answers: (status, seconds to wait before answering) per request, in order; then 200 at once."""

    def __init__(self, *answers: tuple[int, float]):
        self.answers = list(answers)
        self.received: list[Received] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                with receiver.lock:
                    receiver.received.append(Received({k.lower(): v for k, v in self.headers.items()}, body))
                    status, delay = receiver.answers.pop(0) if receiver.answers else (200, 0.0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass  # the sender gave up (its timeout)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.05)
        raise AssertionError(f"{len(self.received)} deliveries received in {timeout} s, expected {count}")
