"""What a worker holds, read from outside as a user sees it, to compare across ``engram down`` /
``engram up`` (issue 48, item 5): a user's facts (``/facts``), the view's counts and applied
offsets (``/view``), a compiled context's items, and the graph's node count.

`settled` waits until the worker has nothing left to apply (the view's applied offsets, the graph
and the facts unchanged over a few reads) so that what it reads is a fixed point. Asking writes
FactAccessed events, so before a stop the context is asked first and the pages read last, and
after the start the pages are read first and the context asked last.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from engram_client import EngramClient

from engram.infra.config import StackInfo
from engram.processors.compiler.items import FACTS_KIND
from engram.streams.config import EngramConfig

SETTLE_READS: Final = 3  # equal consecutive reads that count as settled
SETTLE_POLL_S: Final = 0.7


@dataclass(frozen=True)
class Held:
    """A worker's memory of one user, as its pages and an ask show it."""

    facts: tuple[str, ...]  # each fact as canonical JSON, in the order /facts lists them
    facts_owned: bool
    view: str  # /view's counts and applied offsets, canonical JSON
    graph_nodes: int
    items: tuple[tuple[str, str], ...] = ()  # the compiled context's, in order: `context_items`
    cache_hit: bool = False
    partial: bool = False  # a bound (time, nodes visited) cut the compile short

    def differences(self, other: Held) -> list[str]:
        """What differs from ``other`` (what was held before), by name; empty when all is kept."""
        names = ("facts", "facts_owned", "view", "graph_nodes", "items")
        return [name for name in names if getattr(self, name) != getattr(other, name)]


def page(config: EngramConfig, path: str, token: str | None = None) -> Any:
    """One of the worker's JSON pages, with the bearer token when given; None when it does not
    answer (yet)."""
    request = urllib.request.Request(f"http://{config.web_host}:{config.web_port}{path}")  # noqa: S310 - local
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - the worker we started
            return json.loads(answer.read())
    except OSError:
        return None


def graph_nodes(config: EngramConfig) -> int:
    """Nodes in the worker's FalkorDB graph (0 when it has none yet)."""
    import falkordb

    if config.falkordb_host is None or config.falkordb_port is None:
        return 0
    with falkordb.FalkorDB(host=config.falkordb_host, port=config.falkordb_port) as db:
        if config.graph_name not in db.list_graphs():
            return 0
        return int(db.select_graph(config.graph_name).query("MATCH (n) RETURN count(n)").result_set[0][0])


def read_pages(config: EngramConfig, user: str, token: str | None) -> Held | None:
    """The user's facts, the view and the graph as they are now; None until the worker answers
    and has recovered its tables (``/ready``)."""
    ready = page(config, "/ready")
    facts = page(config, f"/facts?user={user}&limit=1000", token)
    view = page(config, "/view")
    if not ready or not ready.get("ready") or facts is None or view is None:
        return None
    listed = tuple(json.dumps(fact, sort_keys=True) for fact in facts["facts"])
    return Held(listed, bool(facts["owned"]), json.dumps(view, sort_keys=True), graph_nodes(config))


def settled(config: EngramConfig, user: str, token: str | None, timeout_s: float) -> Held:
    """`read_pages` once it reads the same `SETTLE_READS` times in a row."""
    deadline = time.monotonic() + timeout_s
    last: Held | None = None
    same = 0
    while time.monotonic() < deadline:
        held = read_pages(config, user, token)
        same = same + 1 if held is not None and held == last else 0
        if held is not None and same + 1 >= SETTLE_READS:
            return held
        last = held
        time.sleep(SETTLE_POLL_S)
    msg = f"the worker did not settle within {timeout_s:.0f} s (last read: {last})"
    raise TimeoutError(msg)


async def context_items(client: EngramClient, query: str, user: str, session: str) -> Held:
    """The items of the context ``query`` compiles (the pages' fields left empty): each item's
    node id and text, but only the kind of the facts block. Every ask is an access to the facts it
    shows, which reorders them and can promote one to long-term (processors/facts/read.py), so
    the block's text differs from one ask to the next; `Held.facts` compares the facts themselves."""
    answer = await client.ask(query, user_id=user, session_id=session, timeout_s=30)
    items = tuple(
        (FACTS_KIND, "") if item["kind"] == FACTS_KIND else (item["node_id"], item["text"]) for item in answer["items"]
    )
    return Held((), False, "", 0, items, bool(answer["cache_hit"]), bool(answer["partial"]))


def before_stop(config: EngramConfig, user: str, token: str | None, ask: Callable[[], Held], timeout_s: float) -> Held:
    """What the worker holds before it stops: settled, then the context ``ask`` returns, then the
    pages once settled again (the ask's own writes applied)."""
    settled(config, user, token, timeout_s)
    asked = ask()
    return replace(settled(config, user, token, timeout_s), items=asked.items, cache_hit=asked.cache_hit)


def after_start(config: EngramConfig, user: str, token: str | None, ask: Callable[[], Held], timeout_s: float) -> Held:
    """What a worker holds once started again: the pages once settled, then the context ``ask``
    returns (its writes come after what is compared)."""
    pages = settled(config, user, token, timeout_s)
    asked = ask()
    return replace(pages, items=asked.items, cache_hit=asked.cache_hit)


@dataclass
class KeptStack:
    """The stand-ins started by ``engram up`` and stopped by ``engram down``, run as a user runs
    them (each its own process), with each command's wall time in seconds and its JSON report."""

    root: Path
    info: StackInfo | None = None
    restored: dict[str, Any] | None = None  # `RestoreReport.to_json` of the last up, or None
    saved: dict[str, Any] | None = None  # `SaveReport.to_json` of the last down, or None
    up_s: float = 0.0
    down_s: float = 0.0

    def up(self) -> StackInfo:
        started = time.monotonic()
        result = engram_command("up", "--root", str(self.root))
        self.up_s = time.monotonic() - started
        self.restored = result.get("restored")
        self.info = StackInfo.from_json(result)
        return self.info

    def down(self, *, save: bool = True) -> None:
        started = time.monotonic()
        result = engram_command("down", "--root", str(self.root), *(() if save else ("--no-save",)))
        self.down_s = time.monotonic() - started
        self.saved = result.get("saved")
        self.info = None


def engram_command(*argv: str, timeout_s: float = 600.0) -> dict[str, Any]:
    """``engram ARGV --json`` in a process of its own; its JSON object (RuntimeError on failure)."""
    done = subprocess.run(  # noqa: S603 - this interpreter and this package's CLI, fixed arguments
        [sys.executable, "-m", "engram.streams.cli", *argv, "--json"], capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        msg = f"engram {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
        raise RuntimeError(msg)
    result: dict[str, Any] = json.loads(done.stdout)
    return result
