"""Model providers: OpenAI-compatible Chat Completions and Anthropic Messages, through their official SDKs.

The engine asks for one thing: a JSON answer to a prompt, shaped by a JSON schema. Each provider uses its own
structured-output mechanism (OpenAI-compatible: JSON mode; Anthropic: a forced tool call whose input schema is
the caller's schema). Timeouts and retries with backoff on 429/5xx come from the SDKs (max_retries).
"""

from __future__ import annotations

import json
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
    def complete_json(self, *, system: str, messages: list[dict], schema: dict) -> ModelReply: ...

    def choose_tool(self, *, system: str, prompt: str, tools: list[ToolSpec]) -> ToolCall: ...


class OpenAIModel:
    def __init__(self, settings: ModelSettings):
        import openai

        self.settings = settings
        self._errors = openai
        self.client = openai.OpenAI(
            api_key=settings.api_key or "not-needed",
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )

    def complete_json(self, *, system: str, messages: list[dict], schema: dict) -> ModelReply:
        try:
            response = self.client.chat.completions.create(
                model=self.settings.name,
                messages=[{"role": "system", "content": system}, *messages],
                response_format={"type": "json_object"},
                temperature=0,
            )
        except self._errors.APIError as error:
            raise _provider_error(error) from None
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice else ""
        usage = response.usage
        return ModelReply(text, usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0)

    def choose_tool(self, *, system: str, prompt: str, tools: list[ToolSpec]) -> ToolCall:
        try:
            response = self.client.chat.completions.create(
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
            )
        except self._errors.APIError as error:
            raise _provider_error(error) from None
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


class AnthropicModel:
    TOOL = "give_result"

    def __init__(self, settings: ModelSettings):
        import anthropic

        self.settings = settings
        self._errors = anthropic
        self.client = anthropic.Anthropic(
            api_key=settings.api_key or "not-needed",
            base_url=settings.base_url,
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
        )

    def complete_json(self, *, system: str, messages: list[dict], schema: dict) -> ModelReply:
        # Anthropic's tool input must be an object: wrap other schemas in {"result": …}.
        wrapped = schema.get("type") != "object"
        input_schema = (
            {"type": "object", "properties": {"result": schema}, "required": ["result"]} if wrapped else schema
        )
        try:
            response = self.client.messages.create(
                model=self.settings.name,
                max_tokens=4096,
                system=system,
                messages=messages,
                tools=[{"name": self.TOOL, "description": "Return the extracted data.", "input_schema": input_schema}],
                tool_choice={"type": "tool", "name": self.TOOL},
            )
        except self._errors.APIError as error:
            raise _provider_error(error) from None
        text = ""
        for block in response.content:
            if block.type == "tool_use":
                value = block.input.get("result") if wrapped and isinstance(block.input, dict) else block.input
                text = json.dumps(value)
                break
            if block.type == "text":
                text = block.text
        return ModelReply(text, response.usage.input_tokens, response.usage.output_tokens)

    def choose_tool(self, *, system: str, prompt: str, tools: list[ToolSpec]) -> ToolCall:
        try:
            response = self.client.messages.create(
                model=self.settings.name,
                max_tokens=2048,
                system=system,
                messages=[{"role": "user", "content": prompt}],
                tools=[{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools],
                tool_choice={"type": "any"},
            )
        except self._errors.APIError as error:
            raise _provider_error(error) from None
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
