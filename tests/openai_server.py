"""Test support: a real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and
embeddings protocols. It never ships with the package.

Each test scripts it:
- `server.script(contains, reply, times=None, status=200)`: a chat request whose prompt (all
  message texts) contains every given string is answered with `reply` (text, a dict sent as JSON
  text, or a callable taking the request body), or with HTTP `status` when it is not 200; rules
  are tried in the order they were added.
- `server.fail_next(status, times, retry_after=None)`: the next requests get that HTTP error.
- `server.hang_next(seconds, times=1)`: the next requests wait that long before answering.
- `server.reject_json_mode = True`: a request with `response_format` gets a 400, as some
  endpoints do; `server.reject_formats = {"json_schema"}`: only those `response_format` types do.
- `server.raw_next(body, status=200, content_type="text/html", times=1)`: the next requests get
  exactly these bytes (HTML, an empty body, JSON nested too deep...).
- `server.vectors = fn`: embedding requests are answered with `fn(texts)` as the list of
  embeddings (one too few, strings, NaN...) instead of the hashing embedder's vectors.
- A reply may be a `Message(content, tool_calls=[{"name": ..., "arguments": {...}}])`: an
  assistant turn with tool calls, as agent frameworks expect (`finish_reason="length"`: a reply
  cut off at max_tokens). `stream: true` requests are answered
  as server-sent events (content and tool-call deltas, usage when `stream_options.include_usage`).
  `script("", reply, times=1)` rules added in order behave as a queue of agent turns.
- Anthropic's Messages protocol (`POST .../v1/messages`, for the `anthropic` client with
  `base_url=server.anthropic_url`) is answered from the same rules: the prompt is the system text
  and every message's text and tool results; a `Message` becomes text and `tool_use` blocks
  (`stop_reason` "tool_use" or "end_turn"). A request that continues a thread (`thread: {"type":
  "continue", "previous_message_id": ...}`, as the SDK's tool runner sends) is read as the
  conversation held for that reply plus its new messages. `server.messages_requests` holds the
  bodies as sent.
Embedding vectors come from the hashing embedder, so they are deterministic. Every request is
recorded in `server.requests`; chat requests no rule matched are answered with HTTP 418.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Sequence

from reme.embedding import HashEmbedder

class Message:
    """An assistant turn: text and/or tool calls ({"name": str, "arguments": dict | str})."""

    def __init__(self, content: str | None = None, tool_calls: Sequence[dict[str, Any]] = (),
                 finish_reason: str | None = None) -> None:
        self.content, self.tool_calls, self.finish_reason = content, list(tool_calls), finish_reason


Reply = str | dict[str, Any] | Message | Callable[[dict[str, Any]], "str | dict[str, Any] | Message"]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def prompt_of(body: dict[str, Any]) -> str:
    return "\n".join(_text(m.get("content")) for m in body.get("messages", []))


def anthropic_prompt_of(body: dict[str, Any]) -> str:
    """An Anthropic Messages request's system text, message texts and tool results."""
    def texts(content: Any) -> list[str]:
        if not isinstance(content, list):
            return [str(content or "")]
        out: list[str] = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out += texts(block.get("content"))
            elif isinstance(block, dict) and "text" in block:
                out.append(str(block["text"]))
        return out
    return "\n".join([*texts(body.get("system")), *(t for m in body.get("messages", []) for t in texts(m.get("content")))])


class _Rule:
    def __init__(self, contains: Sequence[str], reply: Reply, times: int | None, status: int,
                 fallback: bool = False) -> None:
        self.contains, self.reply, self.times, self.status = list(contains), reply, times, status
        self.fallback = fallback


class OpenAITestServer:
    def __init__(self, dim: int = 32) -> None:
        self.embedder = HashEmbedder(dim=dim)
        self.requests: list[dict[str, Any]] = []
        self.reject_json_mode = False
        self.reject_formats: set[str] = set()
        self.in_flight = 0
        self.calls = 0
        self.max_in_flight = 0
        self._rules: list[_Rule] = []
        self._failures: list[tuple[int, str | None]] = []
        self._hangs: list[float] = []
        self._raw: list[tuple[int, bytes, str]] = []
        self._threads: dict[str, dict[str, Any]] = {}
        self.vectors: Callable[[list[str]], list[Any]] | None = None
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    failure = server._failures.pop(0) if server._failures else None
                    hang = server._hangs.pop(0) if server._hangs else 0.0
                    raw = server._raw.pop(0) if server._raw else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if hang:
                        time.sleep(hang)
                    if raw is not None:
                        self._send(raw[0], raw[1], {"Content-Type": raw[2]})
                    elif failure is not None:
                        status, retry_after = failure
                        self._reply(status, {"error": {"message": f"injected {status}", "type": "test"}},
                                    {"Retry-After": retry_after} if retry_after else {})
                    elif self.path.endswith("/embeddings"):
                        self._embeddings(body)
                    elif self.path.endswith("/chat/completions"):
                        self._chat(body)
                    elif self.path.split("?")[0].endswith("/messages"):
                        self._messages(body)
                    else:
                        self._reply(404, {"error": {"message": f"no route {self.path}"}})
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _embeddings(self, body: dict[str, Any]) -> None:
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = server.vectors(texts) if server.vectors else [server.embedder.embed_one(t) for t in texts]
                data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
                self._reply(200, {"object": "list", "data": data, "model": body.get("model"),
                                  "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}})

            def _scripted(self, body: dict[str, Any], prompt: str,
                          error: Callable[[int, str], dict[str, Any]]) -> tuple[Message, int] | None:
                """The scripted reply to `prompt` and this call's number, or None once an error (418
                when no rule matches, a rule's own status) has been answered in the route's format."""
                rule = server._match(prompt)
                if rule is None or rule.status != 200:
                    status = 418 if rule is None else rule.status
                    self._reply(status, error(status, "no scripted reply matches this prompt" if rule is None
                                              else f"scripted {status}"))
                    return None
                reply = rule.reply(body) if callable(rule.reply) else rule.reply
                message = reply if isinstance(reply, Message) else Message(
                    reply if isinstance(reply, str) else json.dumps(reply))
                with server._lock:
                    server.calls += 1
                    return message, server.calls

            def _chat(self, body: dict[str, Any]) -> None:
                if "response_format" in body and (server.reject_json_mode or (
                        body["response_format"] or {}).get("type") in server.reject_formats):
                    self._reply(400, {"error": {"message": "response_format is not supported",
                                                "type": "invalid_request_error"}})
                    return
                prompt = prompt_of(body)
                answer = self._scripted(body, prompt, lambda status, text: {"error": {
                    "message": text, **({"prompt": prompt[:2000]} if status == 418 else {"type": "test"})}})
                if answer is None:
                    return
                message, n = answer
                calls = [{"id": f"call_{n}_{i}", "type": "function",
                          "function": {"name": tc["name"], "arguments": tc["arguments"] if isinstance(
                              tc.get("arguments"), str) else json.dumps(tc.get("arguments", {}))}}
                         for i, tc in enumerate(message.tool_calls)]
                text = message.content or ""
                prompt_tokens, completion_tokens = len(prompt.split()), len(text.split())
                usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + completion_tokens}
                finish = message.finish_reason or ("tool_calls" if calls else "stop")
                head = {"id": f"chatcmpl-test-{n}", "created": int(time.time()), "model": body.get("model")}
                if body.get("stream"):
                    self._stream(head, message.content, calls, finish,
                                 usage if (body.get("stream_options") or {}).get("include_usage") else None)
                    return
                msg: dict[str, Any] = {"role": "assistant", "content": message.content}
                if calls:
                    msg["tool_calls"] = calls
                self._reply(200, {**head, "object": "chat.completion",
                                  "choices": [{"index": 0, "finish_reason": finish, "message": msg}], "usage": usage})

            def _messages(self, body: dict[str, Any]) -> None:
                thread = body.get("thread") or {}
                if thread.get("type") == "continue":  # the server holds the conversation so far
                    held = server._threads.get(thread.get("previous_message_id"))
                    if held is None:
                        self._reply(404, {"type": "error", "error": {"type": "not_found_error",
                                                                     "message": "no such thread"}})
                        return
                    body = {**held, **body, "messages": held["messages"] + body.get("messages", [])}
                prompt = anthropic_prompt_of(body)
                answer = self._scripted(body, prompt, lambda status, text: {"type": "error", "error": {
                    "type": "invalid_request_error", "message": text}})
                if answer is None:
                    return
                message, n = answer
                blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
                blocks += [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": tc["name"],
                            "input": json.loads(tc["arguments"]) if isinstance(tc["arguments"], str) else tc["arguments"]}
                           for i, tc in enumerate(message.tool_calls)]
                server._threads[f"msg_test_{n}"] = {**{k: v for k, v in body.items() if k != "thread"},
                                                    "messages": [*body.get("messages", []),
                                                                 {"role": "assistant", "content": blocks}]}
                self._reply(200, {"id": f"msg_test_{n}", "type": "message", "role": "assistant",
                                  "model": body.get("model"), "content": blocks, "stop_sequence": None,
                                  "stop_reason": message.finish_reason or ("tool_use" if message.tool_calls
                                                                           else "end_turn"),
                                  "usage": {"input_tokens": len(prompt.split()),
                                            "output_tokens": len((message.content or "").split())}})

            def _stream(self, head: dict[str, Any], content: str | None, calls: list[dict[str, Any]],
                        finish: str, usage: dict[str, int] | None) -> None:
                chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
                if content:
                    chunks.append({"content": content})
                for i, call in enumerate(calls):
                    chunks.append({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                                   "function": {"name": call["function"]["name"], "arguments": ""}}]})
                    chunks.append({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
                events = [{**head, "object": "chat.completion.chunk",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in chunks]
                events.append({**head, "object": "chat.completion.chunk",
                               "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                if usage is not None:
                    events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
                raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
                self._send(200, raw.encode(), {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                if self.path.rstrip("/").endswith("/models"):
                    self._reply(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
                else:
                    self._reply(404, {"error": {"message": f"no route {self.path}"}})

            def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})

            def _send(self, status: int, raw: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(raw)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _match(self, prompt: str) -> _Rule | None:
        with self._lock:
            for rule in sorted(self._rules, key=lambda r: r.fallback):  # a fallback only where no other rule matches
                if rule.times != 0 and all(c in prompt for c in rule.contains):
                    if rule.times is not None:
                        rule.times -= 1
                    return rule
        return None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def anthropic_url(self) -> str:
        """The base URL the `anthropic` client takes (it adds /v1/messages)."""
        return self.base_url.removesuffix("/v1")

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    @property
    def messages_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].split("?")[0].endswith("/messages")]

    def script(self, contains: str | Sequence[str], reply: Reply = "", *, times: int | None = None,
               status: int = 200, fallback: bool = False) -> None:
        """Answer prompts holding every string of `contains` with `reply` (`times` at most). A
        `fallback` answers only prompts no other rule matches, whenever it was scripted."""
        self._rules.append(_Rule([contains] if isinstance(contains, str) else contains, reply, times, status,
                                 fallback))

    def fail_next(self, status: int, times: int = 1, retry_after: str | None = None) -> None:
        with self._lock:
            self._failures.extend([(status, retry_after)] * times)

    def raw_next(self, body: bytes | str, status: int = 200, content_type: str = "text/html",
                 times: int = 1) -> None:
        raw = body.encode() if isinstance(body, str) else body
        with self._lock:
            self._raw.extend([(status, raw, content_type)] * times)

    def hang_next(self, seconds: float, times: int = 1) -> None:
        with self._lock:
            self._hangs.extend([seconds] * times)

    def __enter__(self) -> "OpenAITestServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
