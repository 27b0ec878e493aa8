"""Scripted model servers on 127.0.0.1 that speak the real wire protocols, for the real SDKs to talk to.

Each replays a list of answers, one per request, and keeps every request body it received.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        server: ScriptedModelServer = self.server.owner
        server.requests.append(
            {
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
                "at": time.time(),  # when it arrived (wall clock, to compare with a run's startedAt)
            }
        )
        status, payload = server.answer(self.path, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ScriptedModelServer:
    """answers: strings (the model's text/JSON), {"tool": name, "args": {...}} for tool calls, (status, error body)
    tuples for failures, or {"stall": seconds}: a model that says nothing for that long, then fails. With repeat=True
    the last answer is given again whenever the script runs out (a model that never says done)."""

    def __init__(self, answers: list, *, repeat: bool = False):
        self.answers = list(answers)
        self.repeat = repeat
        self.requests: list[dict] = []
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.http.daemon_threads = True
        self.http.owner = self
        self._thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        if not self.answers:
            return 500, {"error": {"message": "the script ran out of answers", "type": "server_error"}}
        answer = self.answers[0] if self.repeat and len(self.answers) == 1 else self.answers.pop(0)
        if isinstance(answer, dict) and "stall" in answer:
            time.sleep(answer["stall"])
            return 500, {"error": {"message": "stalled", "type": "server_error"}}
        if isinstance(answer, tuple):
            return answer
        return 200, self.reply(body, answer)

    def reply(self, body: dict, text: str) -> dict:
        raise NotImplementedError

    def sent_text(self) -> str:
        """Everything we sent the model, as one string (to look for secrets in)."""
        return json.dumps([r["body"] for r in self.requests])


class FakeOpenAI(ScriptedModelServer):
    """POST /v1/chat/completions, as OpenAI-compatible servers answer it."""

    def reply(self, body: dict, text) -> dict:
        if isinstance(text, dict):
            call = {
                "id": f"call_{len(self.requests)}",
                "type": "function",
                "function": {"name": text["tool"], "arguments": json.dumps(text.get("args", {}))},
            }
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": text}, "stop"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
        }


class FakeAnthropic(ScriptedModelServer):
    """POST /v1/messages, answering with the forced tool call the request asks for."""

    def reply(self, body: dict, text) -> dict:
        if isinstance(text, dict):
            tool, tool_input = text["tool"], text.get("args", {})
        else:
            tool, tool_input = body["tools"][0]["name"], json.loads(text)
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "tool_use", "id": "toolu_1", "name": tool, "input": tool_input}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 200, "output_tokens": 40},
        }


class GroundTruthOpenAI(FakeOpenAI):
    """An OpenAI-compatible extraction model that knows the answers: for the page a prompt names (its URL), the
    ground truth, cut to the properties of the schema the prompt asks for. It counts what it was asked."""

    PAGE = re.compile(r"\n\nPage (\S+):\n<page>")
    SCHEMA = re.compile(r"JSON schema:\n(.*?)\n\nPage ", re.DOTALL)

    def __init__(self, truth: dict[str, dict]):
        super().__init__([])
        self.truth = truth

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        prompt = body["messages"][-1]["content"]
        url, schema = self.PAGE.search(prompt)[1], json.loads(self.SCHEMA.search(prompt)[1])
        if url not in self.truth:
            return 200, self.reply(body, "{}")
        return 200, self.reply(body, json.dumps(self.cut(self.truth[url], schema)))

    @classmethod
    def cut(cls, value, schema: dict):
        if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
            return {key: cls.cut(value.get(key), child) for key, child in schema["properties"].items()}
        return value
