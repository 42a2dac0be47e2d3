"""A hosted model keeps working when each run or probe uses a fresh ``asyncio.run`` loop.

LiteLLM caches its async HTTP clients; a client bound to a closed loop would fail the second run
with "Event loop is closed". The installed LiteLLM keys that cache by event loop; this guards it
with a real OpenAI-compatible server on localhost and a real ``httpx.AsyncClient``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm

from studio.runtime.execution import AgentExecutor


class ChatCompletions(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({
            "id": "c1", "object": "chat.completion", "created": 0, "model": "local",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "hello from local"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_openai():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_hosted_model_answers_in_a_second_and_third_event_loop(local_openai):
    agent = LlmAgent(name="writer", instruction="Say hello.",
                     model=LiteLlm(model="openai/local", api_base=local_openai, api_key="test"))
    executor = AgentExecutor()
    results = [asyncio.run(executor.execute(agent, "hi")) for _ in range(3)]
    assert [(r.output, r.error) for r in results] == [("hello from local", None)] * 3
