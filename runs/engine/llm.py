"""Model providers: OpenAI-compatible Chat Completions and Anthropic Messages, through their official SDKs.

The engine asks for one thing: a JSON answer to a prompt, shaped by a JSON schema. Each provider uses its own
structured-output mechanism (OpenAI-compatible: JSON mode; Anthropic: a forced tool call whose input schema is
the caller's schema). Retries on connection errors, timeouts, 408/409/429 and 5xx are ours rather than the SDKs', so
that a caller's deadline bounds them: each attempt gets at most the time left, and no retry starts past it.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from runs.engine.spec import EngineError

DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_RETRIES = 3


@dataclass(frozen=True)
class ModelSettings:
    provider: str  # "openai" | "anthropic"
    name: str
    api_key: str | None = None
    base_url: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_RETRIES

    def __repr__(self) -> str:  # never show the key, even in a traceback's locals
        return f"ModelSettings(provider={self.provider!r}, name={self.name!r}, base_url={self.base_url!r})"


@dataclass(frozen=True)
class ModelReply:
    text: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict  # a JSON schema object


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict
    input_tokens: int
    output_tokens: int
    text: str = ""


class Model(Protocol):
    def complete_json(
        self, *, system: str, messages: list[dict], schema: dict, deadline: float | None = None
    ) -> ModelReply: ...

    def choose_tool(
        self, *, system: str, prompt: str, tools: list[ToolSpec], deadline: float | None = None
    ) -> ToolCall: ...


class DeadlinePassed(EngineError):
    """The caller's deadline (time.monotonic()) came before the model's answer."""

    def __init__(self) -> None:
        super().__init__("timeout", "The time left ran out while waiting for the model.")


RETRY_STATUSES = {408, 409, 429}
MAX_BACKOFF_SECONDS = 8.0


def _retry_wait(error: Exception, attempt: int, errors) -> float | None:
    """Seconds to wait before retrying after `error`, or None when it is not worth retrying."""
    status = getattr(error, "status_code", None)
    if not (isinstance(error, errors.APIConnectionError) or status in RETRY_STATUSES or (status or 0) >= 500):
        return None
    response = getattr(error, "response", None)
    retry_after = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(retry_after), 60.0)
    except (TypeError, ValueError):
        return min(0.5 * 2**attempt, MAX_BACKOFF_SECONDS)


class _SdkModel:
    """What both providers share: their SDK client, its error module, and requests bounded by a deadline."""

    sdk: str  # the SDK's module, also its error module
    client_class: str

    def __init__(self, settings: ModelSettings):
        self.settings = settings
        self._errors = importlib.import_module(self.sdk)
        self.client = getattr(self._errors, self.client_class)(
            api_key=settings.api_key or "not-needed",
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=0,  # ours: _request
        )

    def _request(self, send: Callable, deadline: float | None):
        """send(client) with retries that stop at the deadline; each attempt's timeout is at most the time left."""
        attempt = 0
        while True:
            timeout = self.settings.timeout_seconds
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    raise DeadlinePassed()
            try:
                return send(self.client.with_options(timeout=timeout, max_retries=0))
            except self._errors.APIError as error:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlinePassed() from None
                wait = _retry_wait(error, attempt, self._errors)
                out_of_time = deadline is not None and time.monotonic() + (wait or 0) >= deadline
                if wait is None or attempt >= self.settings.max_retries or out_of_time:
                    raise _provider_error(error) from None
                time.sleep(wait)
                attempt += 1


class OpenAIModel(_SdkModel):
    sdk, client_class = "openai", "OpenAI"

    def complete_json(
        self, *, system: str, messages: list[dict], schema: dict, deadline: float | None = None
    ) -> ModelReply:
        response = self._request(
            lambda client: client.chat.completions.create(
                model=self.settings.name,
                messages=[{"role": "system", "content": system}, *messages],
                response_format={"type": "json_object"},
                temperature=0,
            ),
            deadline,
        )
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice else ""
        usage = response.usage
        return ModelReply(text, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)

    def choose_tool(
        self, *, system: str, prompt: str, tools: list[ToolSpec], deadline: float | None = None
    ) -> ToolCall:
        response = self._request(
            lambda client: client.chat.completions.create(
                model=self.settings.name,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                tools=[
                    {
                        "type": "function",
                        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                    }
                    for t in tools
                ],
                tool_choice="required",
                temperature=0,
            ),
            deadline,
        )
        usage = response.usage
        tokens = (usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)
        message = response.choices[0].message if response.choices else None
        if not message or not message.tool_calls:
            return ToolCall("", {}, *tokens, text=(message.content or "") if message else "")
        call = message.tool_calls[0].function
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = {"_unparsed": call.arguments}
        return ToolCall(call.name, arguments if isinstance(arguments, dict) else {}, *tokens)


class AnthropicModel(_SdkModel):
    sdk, client_class = "anthropic", "Anthropic"
    TOOL = "give_result"

    def complete_json(
        self, *, system: str, messages: list[dict], schema: dict, deadline: float | None = None
    ) -> ModelReply:
        # Anthropic's tool input must be an object: wrap other schemas in {"result": …}.
        wrapped = schema.get("type") != "object"
        input_schema = (
            {"type": "object", "properties": {"result": schema}, "required": ["result"]} if wrapped else schema
        )
        response = self._request(
            lambda client: client.messages.create(
                model=self.settings.name,
                max_tokens=4096,
                system=system,
                messages=messages,
                tools=[{"name": self.TOOL, "description": "Return the extracted data.", "input_schema": input_schema}],
                tool_choice={"type": "tool", "name": self.TOOL},
            ),
            deadline,
        )
        text = ""
        for block in response.content:
            if block.type == "tool_use":
                value = block.input.get("result") if wrapped and isinstance(block.input, dict) else block.input
                text = json.dumps(value)
                break
            if block.type == "text":
                text = block.text
        return ModelReply(text, response.usage.input_tokens, response.usage.output_tokens)

    def choose_tool(
        self, *, system: str, prompt: str, tools: list[ToolSpec], deadline: float | None = None
    ) -> ToolCall:
        response = self._request(
            lambda client: client.messages.create(
                model=self.settings.name,
                max_tokens=2048,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                tools=[{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools],
                tool_choice={"type": "any"},
            ),
            deadline,
        )
        tokens = (response.usage.input_tokens, response.usage.output_tokens)
        for block in response.content:
            if block.type == "tool_use":
                return ToolCall(block.name, dict(block.input or {}), *tokens)
        text = " ".join(block.text for block in response.content if block.type == "text")
        return ToolCall("", {}, *tokens, text=text)


def _provider_error(error: Exception) -> EngineError:
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    if status == 401 or kind == "AuthenticationError":
        return EngineError("model_auth_error", "The model provider refused the API key.")
    if status == 429 or kind == "RateLimitError":
        return EngineError("model_rate_limited", "The model provider kept answering 429 after retries.")
    if kind in ("APITimeoutError",):
        return EngineError("model_timeout", "The model provider did not answer in time.")
    if kind in ("APIConnectionError",):
        return EngineError("model_unreachable", "The model provider could not be reached.")
    return EngineError("model_error", f"The model provider failed ({kind}{f', HTTP {status}' if status else ''}).")


def make_model(settings: ModelSettings) -> Model:
    if settings.provider == "openai":
        return OpenAIModel(settings)
    if settings.provider == "anthropic":
        return AnthropicModel(settings)
    raise EngineError("model_not_configured", f"Unknown model provider {settings.provider!r}.")
