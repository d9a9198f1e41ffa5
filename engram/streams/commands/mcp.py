"""`engram mcp [--token T] [--user U] [--worker-url URL] [--bootstrap HOST:PORT] [--timeout S]`.

Serves Engram's memory to an agent host over MCP on stdio (engram/mcp_server/): ask, publish a
turn, facts list/search/history, the TOC and graph queries, each acting with the principal's token
(``--token`` or ``ENGRAM_TOKEN``). Broker and topics come from the ENGRAM_* environment over the
stack `engram up` left running (streams/local.py), like every command's; the facts API from the
worker at ``--worker-url`` (default: ``ENGRAM_WEB_HOST``/``ENGRAM_WEB_PORT``). Stdout carries the
protocol only; anything else goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from engram.streams.local import add_broker_flag, command_config

INSTALL_HINT = (
    "engram mcp needs the `mcp` package and the client SDK: pip install -e '.[mcp]' and pip install -e client "
    "(`make install` installs both)"
)


def register(sub: Any) -> None:
    parser = sub.add_parser("mcp", help="serve memory to agents over MCP (stdio): ask, publish, facts, toc, graph")
    parser.add_argument("--token", default=os.environ.get("ENGRAM_TOKEN"), help="bearer token (or ENGRAM_TOKEN)")
    parser.add_argument("--user", default=None, help="the user tools act on by default (default: the token's user)")
    parser.add_argument("--worker-url", default=None, help="a worker's web address, for facts (default: "
                        "http://ENGRAM_WEB_HOST:ENGRAM_WEB_PORT)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds an ask or a query waits for its answer")
    add_broker_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from engram_client import ClientConfig

        from engram.mcp_server.access import McpSettings, MemoryTools, token_user
        from engram.mcp_server.server import build_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "engram_client", "pydantic"):
            raise
        print(f"{INSTALL_HINT} ({exc})", file=sys.stderr)
        return 2
    config = command_config(os.environ, args)
    client = ClientConfig.from_env(os.environ, bootstrap_servers=config.bootstrap_servers, token=args.token or None)
    settings = McpSettings(
        config=config,
        client=client,
        worker_url=args.worker_url or f"http://{config.web_host}:{config.web_port}",
        default_user=args.user or token_user(client.token),
        timeout_s=args.timeout,
    )
    build_server(MemoryTools(settings)).run("stdio")
    return 0
