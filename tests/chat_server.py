"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM transport tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from engram.infra.local_http import JsonHandler, serving

Answer = Callable[[dict[str, Any]], tuple[int, str]]


def completion(content: str) -> str:
    """An OpenAI-compatible response body holding one assistant message."""
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})


@contextmanager
def chat_server(answer: Answer) -> Iterator[str]:
    """Serve ``answer(body) -> (status, response text)`` on a free port; yields the base URL."""

    class Handler(JsonHandler):
        def do_POST(self) -> None:
            status, text = answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            try:
                self.send_json(status, text)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client timed out and left (the slow cases): nothing to answer

    with serving(Handler) as root:
        yield f"{root}/v1"
