"""Chat Completions through the official ``openai`` client: retries, a concurrency limit and a disk cache.

:class:`ChatClient` talks to any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint
(OpenAI, vLLM, Ollama, llama.cpp, SGLang, ...). What it adds to the plain client:

- **Retries.** 408, 409, 429, 5xx, timeouts, connection errors and a body that is no chat completion
  (truncated JSON, a proxy's HTML page, a message, tool call or token count of the wrong type) are
  retried ``max_retries`` times with exponential backoff (``backoff * 2**k`` seconds, at most
  ``max_backoff``; a ``Retry-After`` header of a 429 is honoured up to the same cap). The openai
  client's own retries are off, so every attempt is counted. Other errors (401, 403, 404, 400: a
  wrong key, model or parameter) raise :class:`LLMConfigError` at once: retrying cannot fix them.
- **Concurrency.** At most ``max_concurrency`` requests are in flight per client (a semaphore
  shared by every thread, e.g. the parallel samples of best-of-n).
- **Cache.** A completion is stored on disk under the SHA-256 of the canonical JSON of (model,
  messages, sampling parameters, tools, response format): a rerun of the same decisions makes no
  request. The base URL is not part of the key, so the same model served elsewhere reuses it.
  Files are ``<cache_dir>/<2 hex>/<64 hex>.json`` written atomically; the default directory is
  ``$DYNASCHED_LLM_CACHE``, else ``$XDG_CACHE_HOME/dynasched_gym/llm`` (``~/.cache/...`` without it).
  A write that fails (a read-only or full directory) warns once and the completion is used unstored.
- **Accounting.** Each :class:`Completion` carries the server's ``usage`` token counts (also for
  cached ones: the tokens the decision cost when it was made), the attempts it took and its latency.

The API key is read from the environment variable named ``api_key_env`` and is never stored in
configs, logs or results; local servers need none (a placeholder is sent).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from dynasched_gym.checks import check_bool, check_integer, check_path, check_real, is_integer
from dynasched_gym.instance import write_text_atomic
from dynasched_gym.paths import user_cache_dir
from dynasched_gym.results import canonical_json

#: Sent as the key when ``api_key_env`` is unset: local servers (vLLM, Ollama) accept any key.
NO_KEY = "not-needed"
#: HTTP statuses below 500 that are retried (timeout, conflict, rate limit); other 4xx raise at once.
RETRY_STATUSES = (408, 409, 429)
#: Refusals that stop an evaluation (:class:`LLMConfigError`): a wrong key or model fails every episode alike.
STOP_STATUSES = (401, 403, 404)


class LLMError(RuntimeError):
    """A request failed after every retry (the agent falls back to its rule and counts it); ``latency_s``: the
    seconds its attempts and backoff took."""

    def __init__(self, message: str, attempts: int, latency_s: float = 0.0) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.latency_s = latency_s


class MalformedResponseError(RuntimeError):
    """A 200 response whose body is no chat completion (not JSON, JSON without ``choices``, a message, tool call or
    token count of the wrong type): retried like a 5xx."""


class LLMConfigError(RuntimeError):
    """The endpoint refused the request for a reason retries cannot fix (key, model, parameters).

    ``stops_run`` (read by ``scripts.evaluate``) is true for HTTP 401, 403 and 404 (the key or the model
    name): every episode would fail the same way, and failed rows stored under an agent hash that does not
    include the key would never be retried. Other refusals (e.g. 400 for one over-long prompt) fail that
    episode only. ``attempts`` and ``latency_s``: the requests sent (retries of earlier transient failures
    included) and the seconds they took, as :class:`LLMError`'s.
    """

    def __init__(self, message: str, status: int | None = None, attempts: int = 1, latency_s: float = 0.0) -> None:
        super().__init__(message)
        self.stops_run = status in STOP_STATUSES
        self.attempts = attempts
        self.latency_s = latency_s


class LLMUnavailableError(RuntimeError):
    """The endpoint failed several decisions in a row (:class:`~.agent.LLMAgent`'s ``max_consecutive_errors``):
    it is down or unreachable, so the episode (and an evaluation, ``stops_run``) stops instead of letting the
    fallback rule play every decision."""

    #: ``scripts.evaluate`` stops the whole run on this error instead of storing a failed row.
    stops_run = True


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for; ``arguments`` is the raw JSON text it wrote."""

    id: str
    name: str
    arguments: str

    def __post_init__(self) -> None:
        for name in ("id", "name", "arguments"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"a tool call's {name} must be text, got {repr(getattr(self, name))[:200]}")


@dataclass(frozen=True)
class Completion:
    """One chat completion (the first choice) with its cost."""

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0  # HTTP requests sent for it (0: served from the cache)
    cached: bool = False
    finish_reason: str | None = None  # the server's ("stop", "length": cut at max_tokens, "tool_calls")
    refusal: str | None = None  # why the model declined to answer (OpenAI's structured outputs), instead of content

    def __post_init__(self) -> None:
        # a server's (or a cache file's) wrong type would crash the parsing or be stored and replayed
        for name in ("content", "refusal"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"the message {name} must be text or null, got {repr(value)[:200]}")
        for name in ("prompt_tokens", "completion_tokens"):
            value = getattr(self, name)
            if not is_integer(value) or value < 0:
                raise TypeError(f"usage.{name} must be a count, got {repr(value)[:200]}")

    def message(self) -> dict[str, Any]:
        """The assistant message to append to a conversation that continues after it."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in self.tool_calls]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The cached form (content, tool calls, token usage, finish reason, refusal)."""
        return {"content": self.content, "tool_calls": [[c.id, c.name, c.arguments] for c in self.tool_calls],
                "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens},
                "finish_reason": self.finish_reason, "refusal": self.refusal}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Completion:
        """A completion served from the cache (TypeError or KeyError for a file of another shape)."""
        return cls(data["content"], tuple(ToolCall(*c) for c in data["tool_calls"]), data["usage"]["prompt_tokens"],
                   data["usage"]["completion_tokens"], cached=True, finish_reason=data.get("finish_reason"),
                   refusal=data.get("refusal"))


def default_cache_dir() -> Path:
    """``$DYNASCHED_LLM_CACHE`` when set, else ``llm`` in the package's cache directory, as for the pools and the
    kernels (:func:`dynasched_gym.paths.user_cache_dir`: ``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    return user_cache_dir("llm", "DYNASCHED_LLM_CACHE")


class ResponseCache:
    """Completions on disk, keyed by the hash of the request (module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._warned = False  # a failed write was reported
        self._lock = threading.Lock()  # best-of-n samples write from several threads

    @staticmethod
    def key(model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], sample: int = 0) -> str:
        """SHA-256 hex of the canonical JSON of the request (and of ``sample``, the draw's index, when not 0)."""
        request = {"model": model, "messages": list(messages), "params": dict(params)}
        text = canonical_json({**request, "sample": sample} if sample else request)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        """The stored completion, or None (a missing or unreadable file, or one of another shape, is a miss)."""
        try:
            return Completion.from_dict(json.loads(self._path(key).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: str, completion: Completion) -> None:
        """Store ``completion`` atomically (a concurrent writer of the same key writes the same bytes).

        A failed write (a read-only or full directory) warns once and stores nothing: the completion has been paid
        for, and the cache only saves requests, so the episode goes on. No partial file is left.
        """
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(path, json.dumps(completion.to_dict()))
        except OSError as exc:
            with self._lock:
                first, self._warned = not self._warned, True
            if first:
                warnings.warn(f"the LLM response cache {self.directory} cannot store completions ({exc}): going on "
                              "without storing them (stored ones are still read; this is reported once); set cache_dir "
                              "or $DYNASCHED_LLM_CACHE to a writable folder, or cache=False", RuntimeWarning,
                              stacklevel=3)


@dataclass
class ChatClient:
    """An OpenAI-compatible Chat Completions client with retries, a concurrency limit and a cache.

    Args:
        model: model name as the server knows it.
        base_url: endpoint root, e.g. ``http://localhost:8000/v1`` (vLLM) or ``http://localhost:11434/v1``
            (Ollama); ``None``: the openai client's default (``$OPENAI_BASE_URL`` or api.openai.com).
        api_key_env: NAME of the environment variable holding the API key (unset: a placeholder key).
        timeout: seconds per request.
        max_retries: retries of a request after a 429, 5xx, timeout, connection error or malformed body.
        backoff: first retry delay in seconds (doubles each retry).
        max_backoff: cap of a retry delay (also of an honoured ``Retry-After``).
        max_concurrency: requests in flight at once.
        cache_dir: directory of the response cache; ``None``: :func:`default_cache_dir`.
        cache: use the response cache.
    """

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_concurrency: int = 4
    cache_dir: str | os.PathLike[str] | None = None
    cache: bool = True
    _client: Any = field(init=False, repr=False)
    _slots: threading.BoundedSemaphore = field(init=False, repr=False)
    _store: ResponseCache | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("model", "api_key_env"):
            if not getattr(self, name) or not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")
        if self.base_url is not None and not isinstance(self.base_url, str):
            raise TypeError(f"base_url must be a URL string or None, got {self.base_url!r}")
        # a string, 2.5 or NaN failed at the first request or retry (in range() or time.sleep), naming no setting
        self.timeout, self.max_backoff = (check_real(name, getattr(self, name), 0.0, open_low=True)
                                          for name in ("timeout", "max_backoff"))
        self.backoff = check_real("backoff", self.backoff, 0.0)
        self.max_retries = check_integer("max_retries", self.max_retries, 0)
        self.max_concurrency = check_integer("max_concurrency", self.max_concurrency, 1)
        self.cache = check_bool("cache", self.cache)
        if self.cache_dir is not None:
            check_path("cache_dir", self.cache_dir)
        self._client = openai.OpenAI(base_url=self.base_url, api_key=os.environ.get(self.api_key_env) or NO_KEY,
                                     timeout=self.timeout, max_retries=0)
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self._store = ResponseCache(self.cache_dir or default_cache_dir()) if self.cache else None

    def complete(self, messages: Sequence[Mapping[str, Any]], sample: int = 0, **params: Any) -> Completion:
        """The completion of ``messages`` (from the cache when stored); ``params`` go to the request as they are.

        ``sample`` numbers independent draws of one request (best-of-n without a seed): it enters the cache key
        only, so each draw is stored and replayed apart from the others.

        Raises :class:`LLMError` when every attempt failed transiently and :class:`LLMConfigError` when the
        endpoint refused the request.
        """
        params = {k: v for k, v in params.items() if v is not None}
        key = ""
        if self._store is not None:
            key = ResponseCache.key(self.model, messages, params, sample)
            hit = self._store.get(key)
            if hit is not None:
                return hit
        began = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            try:
                completion = _completion(self._create(messages, params), time.perf_counter() - began, attempt + 1)
            except (openai.APITimeoutError, openai.APIConnectionError, openai.APIStatusError,
                    MalformedResponseError) as exc:
                status = getattr(exc, "status_code", None)
                if status is not None and status not in RETRY_STATUSES and status < 500:
                    raise LLMConfigError(
                        f"{self.base_url or 'the default OpenAI endpoint'} refused the request for model "
                        f"{self.model!r} (HTTP {status}: {exc.message}); check the model name, the key in "
                        f"${self.api_key_env} and response_format (json_schema is not supported everywhere: try "
                        "json_object or text)", status, attempt + 1, time.perf_counter() - began) from exc
                if attempt == self.max_retries:
                    raise LLMError(f"{type(exc).__name__} after {attempt + 1} attempt(s): {exc}", attempt + 1,
                                   time.perf_counter() - began) from exc
                time.sleep(self._delay(attempt, exc))
                continue
            if self._store is not None:
                self._store.put(key, completion)
            return completion
        raise AssertionError("unreachable")

    def _create(self, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> ChatCompletion:
        """One request; :class:`MalformedResponseError` when the body is no chat completion."""
        with self._slots:
            try:
                response = self._client.chat.completions.create(model=self.model, messages=list(messages), **params)
            except json.JSONDecodeError as exc:
                raise MalformedResponseError(f"the response body is not JSON ({exc})") from exc
        if not isinstance(response, ChatCompletion) or not response.choices:
            raise MalformedResponseError(f"the response is no chat completion with choices: {str(response)[:200]!r}")
        return response

    def _delay(self, attempt: int, exc: Exception) -> float:
        delay = self.backoff * 2**attempt
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass  # an HTTP date: keep the exponential delay
        return min(delay, self.max_backoff)


def _completion(response: ChatCompletion, latency: float, attempts: int) -> Completion:
    """The first choice of an openai ``ChatCompletion`` as a :class:`Completion`; :class:`MalformedResponseError` when
    its message, tool calls or token counts are of the wrong type (the openai client does not check them: they
    crashed the parsing, or read as an empty answer that was cached)."""
    choice = response.choices[0]
    message, usage = getattr(choice, "message", None), response.usage
    try:
        if not isinstance(message, ChatCompletionMessage):
            raise TypeError(f"choices[0].message must be a message object, got {repr(message)[:200]}")
        if message.tool_calls is not None and not isinstance(message.tool_calls, list):
            raise TypeError(f"tool_calls must be a list, got {repr(message.tool_calls)[:200]}")
        if usage is not None and not isinstance(usage, CompletionUsage):
            raise TypeError(f"usage must be an object, got {repr(usage)[:200]}")
        calls = []
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            arguments, call_id = getattr(function, "arguments", None), getattr(call, "id", None)
            # some servers leave the id out; the reply to the call needs one, and a fixed one keeps the next
            # request (and so its cache key) the same on every rerun
            calls.append(ToolCall(f"call_{index}" if call_id is None else call_id, getattr(function, "name", None),
                                  "" if arguments is None else arguments))
        finish = getattr(choice, "finish_reason", None)
        return Completion(message.content, tuple(calls), getattr(usage, "prompt_tokens", None) or 0,
                          getattr(usage, "completion_tokens", None) or 0, latency, attempts,
                          finish_reason=finish if isinstance(finish, str) else None, refusal=message.refusal)
    except TypeError as exc:
        raise MalformedResponseError(f"the response is no valid chat completion: {exc}") from exc
