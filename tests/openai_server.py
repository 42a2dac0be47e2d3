"""A real OpenAI-compatible chat server on 127.0.0.1 (stdlib ``http.server`` in a thread) for
tests of hosted-model replies: LiteLLM calls it as ``openai/<name>`` through ADK, so a reply goes
the whole real path (HTTP, the OpenAI client, LiteLLM's mapping, ADK's events).

``reply(body)`` gets the request's JSON and returns what the server does: a string (the
assistant's content), ``None`` (``content: null``), a :class:`Raw` (status and JSON body as
given), or :data:`RESET` (the connection is reset without an answer).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RESET = object()
CUT = object()


@dataclass
class Raw:
    """An answer sent as given: any status, any JSON body (``choices: []``, an error...)."""

    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: Any, **message: Any) -> dict[str, Any]:
    """A chat.completion body with one choice whose message has ``content``."""
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "local",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, **message}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@dataclass
class LocalServer:
    url: str
    requests: list[dict[str, Any]]


@contextmanager
def local_openai(reply: Callable[[dict[str, Any]], Any]) -> Iterator[LocalServer]:
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            requests.append(body)
            answer = reply(body)
            if answer is RESET:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                return
            if answer is CUT:  # headers promise a body the connection closes halfway through
                data = json.dumps(completion("a reply cut short")).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[:len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            if not isinstance(answer, Raw):
                answer = Raw(completion(answer))
            data = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield LocalServer(f"http://127.0.0.1:{server.server_address[1]}/v1", requests)
    finally:
        server.shutdown()
        server.server_close()
