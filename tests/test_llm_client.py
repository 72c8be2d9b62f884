"""The Chat Completions client and answer parsing, against a scripted HTTP server on 127.0.0.1.

:class:`ChatServer` (also used by the other ``test_llm_*`` files) speaks the Chat Completions
protocol: ``POST /v1/chat/completions`` answers with ``choices[].message`` (content or tool calls)
and ``usage``; scripted entries can also sleep, or fail with an HTTP status.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynasched_gym.agents.llm import client as llm_client
from dynasched_gym.agents.llm.client import ChatClient, LLMConfigError, LLMError, default_cache_dir
from dynasched_gym.agents.llm.parsing import REASONS, answer_schema, parse_answer

Answer = dict[str, Any]


def table_ids(body: dict[str, Any]) -> list[int]:
    """The action ids of the candidate table in a request's first user message."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return [int(x) for x in re.findall(r"^\| (\d+) \|", user, re.MULTILINE)]


def first_id(body: dict[str, Any]) -> Answer:
    """Default answer: the first id of the table."""
    return {"content": json.dumps({"action_id": table_ids(body)[0]})}


class ChatServer:
    """A Chat Completions endpoint on a free port of 127.0.0.1, answering scripted entries, then ``responder``.

    An entry: ``content`` (str or None), ``tool_calls`` ([(name, arguments dict or text)]), ``usage``
    ((prompt, completion) tokens, default (50, 5)), ``sleep`` (seconds before answering), ``status``
    (an HTTP error status instead of a completion), ``headers`` (extra response headers), ``body`` (text sent
    as the 200 response's body instead of a completion, as ``content_type``, default JSON), ``finish_reason``,
    ``refusal``.
    """

    def __init__(self, responder: Callable[[dict[str, Any]], Answer] = first_id) -> None:
        self.script: deque[Answer] = deque()
        self.responder = responder
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def requests(self) -> int:
        """Requests received so far."""
        return len(self.bodies)

    def push(self, *answers: Answer) -> None:
        self.script.extend(answers)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _next(self, body: dict[str, Any]) -> Answer:
        with self.lock:
            self.bodies.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            scripted = self.script.popleft() if self.script else None
        return scripted if scripted is not None else self.responder(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any] | str, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.auth.append(self.headers.get("Authorization"))
                answer = server._next(body)
                try:
                    time.sleep(answer.get("sleep", 0.0))
                finally:  # before the answer is sent: the client's next request must not find this one in flight
                    with server.lock:
                        server.in_flight -= 1
                try:
                    if self.path != "/v1/chat/completions":
                        self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    elif answer.get("status", 200) != 200:
                        self._send(answer["status"], {"error": {"message": "scripted failure", "type": "server"}},
                                   answer.get("headers"))
                    elif "body" in answer:
                        self._send(200, answer["body"], content_type=answer.get("content_type", "application/json"))
                    else:
                        self._send(200, completion(body, answer))
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        return Handler


def completion(body: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """A ``chat.completion`` object for ``answer``."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content"), "refusal": answer.get("refusal")}
    calls = answer.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {
            "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]
    prompt, done = answer.get("usage", (50, 5))
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message,
                         "finish_reason": answer.get("finish_reason", "tool_calls" if calls else "stop")}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}}


def _client(server: ChatServer, tmp_path: Path, **kwargs: Any) -> ChatClient:
    options = {"timeout": 0.5, "max_retries": 2, "backoff": 0.01, "cache_dir": tmp_path / "cache", **kwargs}
    return ChatClient("test-model", server.url, **options)


MESSAGES = [{"role": "user", "content": "| 3 |\n| 5 |"}]


# ------------------------------------------------------------------------------------------ the client
def test_completion_carries_content_and_the_servers_token_counts(server: ChatServer, tmp_path: Path) -> None:
    server.push({"content": '{"action_id": 5}', "usage": (123, 45)})
    out = _client(server, tmp_path, cache=False).complete(MESSAGES, temperature=0.0, seed=7, top_p=None)
    assert (out.content, out.prompt_tokens, out.completion_tokens, out.attempts, out.cached) == (
        '{"action_id": 5}', 123, 45, 1, False)
    body = server.bodies[0]
    assert body["model"] == "test-model" and body["messages"] == MESSAGES
    assert body["temperature"] == 0.0 and body["seed"] == 7 and "top_p" not in body  # None is not sent


def test_cache_hit_makes_no_request_and_keeps_the_token_counts(server: ChatServer, tmp_path: Path) -> None:
    server.push({"content": "A", "usage": (10, 2)})
    first = _client(server, tmp_path).complete(MESSAGES, temperature=0.0)
    again = _client(server, tmp_path).complete(MESSAGES, temperature=0.0)  # a new client, same cache directory
    assert server.requests == 1
    assert (again.content, again.prompt_tokens, again.completion_tokens, again.cached, again.attempts) == (
        "A", 10, 2, True, 0)
    assert not first.cached
    _client(server, tmp_path).complete(MESSAGES, temperature=0.5)  # other sampling parameters: another key
    assert server.requests == 2


def test_a_cached_refusal_is_replayed(server: ChatServer, tmp_path: Path) -> None:
    """A rerun from the cache says why its answer was missing, as the first run did."""
    server.push({"content": None, "refusal": "I cannot help with that.", "finish_reason": "stop"})
    _client(server, tmp_path).complete(MESSAGES)
    again = _client(server, tmp_path).complete(MESSAGES)
    assert again.cached and (again.content, again.refusal, again.finish_reason) == (None, "I cannot help with that.",
                                                                                    "stop")


def test_429_then_success_is_retried_with_backoff(server: ChatServer, tmp_path: Path) -> None:
    server.push({"status": 429, "headers": {"Retry-After": "0.05"}}, {"content": "ok"})
    began = time.perf_counter()
    out = _client(server, tmp_path, backoff=0.001).complete(MESSAGES)
    assert out.content == "ok" and out.attempts == 2 and server.requests == 2
    assert time.perf_counter() - began >= 0.05  # Retry-After honoured over the tiny backoff


def test_retries_back_off_exponentially_up_to_the_cap(server: ChatServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """backoff * 2**k seconds before retry k + 1, at most max_backoff, which also caps a Retry-After."""
    slept: list[float] = []  # the client's sleeps only (the test server sleeps too)
    monkeypatch.setattr(llm_client, "time", SimpleNamespace(perf_counter=time.perf_counter, sleep=slept.append))
    server.push({"status": 500}, {"status": 500}, {"status": 500}, {"content": "ok"})
    assert _client(server, tmp_path, max_retries=3, backoff=0.1, max_backoff=0.3).complete(MESSAGES).attempts == 4
    assert slept == [0.1, 0.2, 0.3]
    server.push({"status": 429, "headers": {"Retry-After": "5"}}, {"content": "ok"})
    _client(server, tmp_path, backoff=0.1, max_backoff=0.3).complete(MESSAGES, temperature=1.0)
    assert slept[3:] == [0.3]


def test_5xx_are_retried_then_reported(server: ChatServer, tmp_path: Path) -> None:
    server.push({"status": 500}, {"status": 503}, {"content": "ok"})
    assert _client(server, tmp_path).complete(MESSAGES).attempts == 3
    server.push({"status": 500}, {"status": 502}, {"status": 500})
    with pytest.raises(LLMError, match="3 attempt") as info:
        _client(server, tmp_path, max_retries=2).complete(MESSAGES, temperature=1.0)
    assert info.value.attempts == 3 and server.requests == 6


def test_a_body_that_is_no_chat_completion_is_retried_then_reported(server: ChatServer, tmp_path: Path) -> None:
    """A truncated JSON body, a proxy's HTML page or JSON without choices raised JSONDecodeError or AttributeError
    out of the client: the episode crashed instead of retrying and falling back."""
    server.push({"body": '{"choices": [{"message": '},
                {"body": "<html>bad gateway</html>", "content_type": "text/html"}, {"content": "ok"})
    assert _client(server, tmp_path, cache=False).complete(MESSAGES).attempts == 3
    server.push({"body": "[1, 2]"}, {"body": '{"error": {"message": "overloaded"}}'})
    with pytest.raises(LLMError, match=r"MalformedResponseError after 2 attempt.*overloaded") as info:
        _client(server, tmp_path, cache=False, max_retries=1).complete(MESSAGES)
    assert info.value.attempts == 2


def _body(message: Any = None, usage: Any = None, choice: Any = None) -> str:
    """A chat completion body whose first choice is ``choice``, else has ``message`` (an answer's by default)."""
    message = {"role": "assistant", "content": '{"action_id": 3}'} if message is None else message
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
                       "choices": [choice if choice is not None else {"index": 0, "message": message,
                                                                      "finish_reason": "stop"}],
                       "usage": usage if usage is not None else {"prompt_tokens": 5, "completion_tokens": 1}})


def _call(**function: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": function}]}


@pytest.mark.parametrize("body", [
    _body({"role": "assistant", "content": 3}), _body({"role": "assistant", "content": [{"type": "text"}]}),
    _body({"role": "assistant", "content": None, "refusal": {"reason": "no"}}),
    _body(usage={"prompt_tokens": "many", "completion_tokens": 1}), _body(usage=[5, 1]),
    _body(choice="x"), _body(message="hi"),
    _body({"role": "assistant", "content": None, "tool_calls": "inspect_action"}),
    _body(_call(arguments='{"action_id": 3}')), _body(_call(name="inspect_action", arguments={"action_id": 3})),
    _body({"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": None}]}),
])
def test_a_message_of_the_wrong_types_is_retried_and_never_cached(server: ChatServer, tmp_path: Path,
                                                                  body: str) -> None:
    """The openai client does not check the types inside a completion: a non-text content, a token count that is no
    number or tool arguments that are an object crashed the episode (TypeError, ValueError); a choice without a
    message, tool calls that are no list or a call without a function read as an empty answer, which was cached."""
    server.push({"body": body}, {"content": "ok"})
    out = _client(server, tmp_path).complete(MESSAGES)
    assert (out.content, out.attempts) == ("ok", 2)
    server.push({"body": body})
    with pytest.raises(LLMError, match="no valid chat completion"):
        _client(server, tmp_path, max_retries=0).complete(MESSAGES, temperature=0.5)
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1  # only the good one


def test_a_tool_call_without_an_id_gets_one(server: ChatServer, tmp_path: Path) -> None:
    """Servers that leave a tool call's id out: the completion was refused as malformed, retried and the decision
    failed, though the call itself was fine. Its id is now its index in the message (the same on every rerun)."""
    calls = [{"id": "c7", "type": "function", "function": {"name": "simulate_action", "arguments": "{}"}},
             {"type": "function", "function": {"name": "inspect_action", "arguments": '{"action_id": 3}'}}]
    server.push({"body": _body({"role": "assistant", "content": None, "tool_calls": calls})})
    out = _client(server, tmp_path).complete(MESSAGES)
    assert out.attempts == 1 and [(c.id, c.name) for c in out.tool_calls] == [("c7", "simulate_action"),
                                                                                ("call_1", "inspect_action")]
    assert [c["id"] for c in out.message()["tool_calls"]] == ["c7", "call_1"]
    assert _client(server, tmp_path).complete(MESSAGES).tool_calls == out.tool_calls  # replayed from the cache


def test_a_cache_file_of_another_shape_is_a_miss(server: ChatServer, tmp_path: Path) -> None:
    """A cached content that was no text was replayed, and crashed the parsing of every rerun."""
    server.push({"content": "A"}, {"content": "B"})
    _client(server, tmp_path).complete(MESSAGES)
    [path] = (tmp_path / "cache").rglob("*.json")
    path.write_text(json.dumps({"content": 5, "tool_calls": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}))
    out = _client(server, tmp_path).complete(MESSAGES)
    assert (out.content, out.cached, server.requests) == ("B", False, 2)


def test_timeout_is_an_error_after_its_retries(server: ChatServer, tmp_path: Path) -> None:
    server.push({"sleep": 1.0, "content": "late"}, {"sleep": 1.0, "content": "late"})
    began = time.perf_counter()
    with pytest.raises(LLMError, match="APITimeoutError"):
        _client(server, tmp_path, timeout=0.2, max_retries=1).complete(MESSAGES)
    assert server.requests == 2 and time.perf_counter() - began < 0.9


def test_refused_requests_raise_at_once_naming_the_key_variable(server: ChatServer, tmp_path: Path) -> None:
    server.push({"status": 401})
    with pytest.raises(LLMConfigError, match=r"HTTP 401.*\$MY_LLM_KEY") as refused:
        _client(server, tmp_path, api_key_env="MY_LLM_KEY").complete(MESSAGES)
    assert server.requests == 1  # not retried
    assert refused.value.stops_run  # a wrong key fails every episode: an evaluation stops
    server.push({"status": 400})
    with pytest.raises(LLMConfigError, match=r"HTTP 400") as refused:
        _client(server, tmp_path, cache=False).complete(MESSAGES)
    assert not refused.value.stops_run  # e.g. one over-long prompt: that episode fails, the run goes on


def test_api_key_comes_from_the_named_variable(server: ChatServer, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", "sk-secret-123")
    client = _client(server, tmp_path, api_key_env="MY_LLM_KEY", cache=False)
    client.complete(MESSAGES)
    assert server.auth[-1] == "Bearer sk-secret-123"
    assert "sk-secret" not in repr(client)
    monkeypatch.delenv("MY_LLM_KEY")
    _client(server, tmp_path, api_key_env="MY_LLM_KEY", cache=False).complete(MESSAGES)
    assert server.auth[-1] == "Bearer not-needed"


@pytest.mark.parametrize(("field", "value"), [
    ("timeout", 0), ("max_retries", -1), ("max_concurrency", 0), ("backoff", -1.0),
    # accepted, then failed at the first request or retry without naming the setting (or never)
    ("max_retries", 2.5), ("max_retries", True), ("timeout", "60"), ("backoff", float("nan")),
    ("max_backoff", float("inf")), ("max_concurrency", 2.5), ("cache", "no"), ("api_key_env", None),
    ("base_url", 8000), ("cache_dir", 5),
])
def test_bad_client_settings_name_the_field(server: ChatServer, tmp_path: Path, field: str, value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=field):
        _client(server, tmp_path, **{field: value})


# ------------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize(("text", "expected"), [
    ('{"action_id": 3}', 3),
    ('```json\n{"action_id": 5}\n```', 5),
    ('I choose this.\n{"reasoning": "short job", "action_id": "5"} done', 5),
    ("<think>maybe {\"action_id\": 9}</think>\n{\"action_id\": 3.0}", 3),
    ('First {"action_id": 5}, then 3.</think>\n\n{"action_id": 3}', 3),
    ('{"note": {"x": 1}, "action_id": 3}', 3),
    # a nested object's action_id never wins, fenced or bare (it did after prose or a fence: 5 here)
    ('```json\n{"action_id": 3, "alternatives": [{"action_id": 5}]}\n```', 3),
    ('I pick {"action_id": 3, "scores": {"action_id": 5}} and {"note": 1}', 3),
    ('{"action_id": 5}? On reflection: {"action_id": 3}', 3),  # the last object wins
])
def test_parse_answer_reads_json_out_of_prose(text: str, expected: int) -> None:
    assert parse_answer(text, [3, 5]).action_id == expected


@pytest.mark.parametrize(("text", "reason"), [
    (None, "empty"), ("   ", "empty"), ("<think>hmm</think>", "empty"),
    # the reasoning of a template that wrote <think> into the prompt: its ids were taken (5) as the answer
    ('Maybe {"action_id": 5}? No.</think>', "empty"), ('Maybe {"action_id": 5}.</THINK>\nThe third one.',
                                                     "invalid_json"),
    ('{"action_id": ', "invalid_json"), ("action 3", "invalid_json"), ('{"action_id": true}', "invalid_json"),
    ('{"action_id": "three"}', "invalid_json"), ('{"id": 3}', "invalid_json"),
    ('{"action_id": 4}', "illegal_action"), ('{"action_id": -3}', "illegal_action"),
    ('{"action_id": "-3"}', "illegal_action"),  # an integer, as -3 is
    ("[" * 1200, "invalid_json"), ('ok {"a": ' + "[" * 1200, "invalid_json"),  # raised RecursionError
    ('{"action_id": "' + "1" * 5000 + '"}', "invalid_json"),  # raised ValueError: int()'s digit limit
    ('{"action_id": "' + "1" * 4000 + '"}', "illegal_action"),
    ('{"action_id": "\u0663"}', "invalid_json"),  # ARABIC-INDIC DIGIT THREE: JSON ids are ASCII
])
def test_parse_answer_rejects_with_a_reason(text: str | None, reason: str) -> None:
    answer = parse_answer(text, [3, 5])
    assert not answer.ok and answer.reason == reason and answer.detail


def test_a_degenerate_reply_is_not_decoded_at_each_brace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reply looping on '{"a": "' (a model stuck until max_tokens) was decoded from each of its braces, and each
    failure costs time in proportion to its position: 700 k characters took 40 s. Braces after the last
    "action_id" cannot start an object holding it."""
    decoded: list[int] = []
    real = json.JSONDecoder.raw_decode

    def counted(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[Any, int]:
        decoded.append(idx)
        return real(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    assert parse_answer('{"a": "' * 5000, [3]).reason == "invalid_json"
    assert len(decoded) <= 1  # json.loads of the whole text
    assert parse_answer('{"action_id": 3} then ' + '{"a": "' * 5000, [3]).action_id == 3
    decoded.clear()  # braces before the key that no key or '}' follows: 10^5 characters of "{\n" took 4 s
    assert parse_answer("{\n" * 5000 + '{ \n"action_id": 3} {}', [3]).action_id == 3
    assert len(decoded) == 2  # the whole text, then the one object start


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                           max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(action=json_values, prose=st.text(max_size=40))
def test_parse_answer_never_raises_and_plays_only_legal_ids(action: Any, prose: str) -> None:
    text = prose + json.dumps({"action_id": action}) + prose
    answer = parse_answer(text, [3, 5])
    assert answer.ok == (answer.action_id in (3, 5)) and (answer.ok or answer.reason in REASONS)


def test_answer_schema_enumerates_the_legal_ids() -> None:
    schema = answer_schema([5, 3], reasoning=True)
    assert schema["properties"]["action_id"]["enum"] == [3, 5]
    assert schema["required"] == ["reasoning", "action_id"] and schema["additionalProperties"] is False


def test_the_response_cache_lives_with_the_other_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It ignored $XDG_CACHE_HOME, which the pool and kernel caches honour."""
    monkeypatch.delenv("DYNASCHED_LLM_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "dynasched_gym" / "llm"
    monkeypatch.setenv("DYNASCHED_LLM_CACHE", str(tmp_path / "given"))
    assert default_cache_dir() == tmp_path / "given"
