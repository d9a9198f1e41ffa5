"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1 for the LLM transport tests."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], tuple[int, str]]


def completion(content: str) -> str:
    """An OpenAI-compatible response body holding one assistant message."""
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})


@contextmanager
def chat_server(answer: Answer) -> Iterator[str]:
    """Serve ``answer(body) -> (status, response text)`` on a free port; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            status, text = answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            payload = text.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client timed out and left (the slow cases): nothing to answer

        def log_message(self, fmt: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=functools.partial(server.serve_forever, poll_interval=0.02), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
