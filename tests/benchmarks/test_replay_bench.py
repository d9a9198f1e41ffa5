"""`engram bench replay`: two replays of one log into empty stores agree on every store's content,
and each hash is sensitive to the content (one event less, another hash)."""

from __future__ import annotations

import argparse
from pathlib import Path

from engram.benchmarks.ingest import make_turns, texts
from engram.benchmarks.replay import run
from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.digest import view_content_hash
from engram.processors.retrieval.view import MemoryView
from engram.schemas.record import Record
from engram.streams.steps import derive_turns


def test_two_replays_of_one_log_give_equal_hashes_for_every_store(tmp_path: Path) -> None:
    args = argparse.Namespace(log=None, turns=120, users=4, data=None, batches=[50, 7], json=True)
    result = run(args)
    assert result["all_equal"] is True
    stores = result["stores"]
    assert isinstance(stores, dict) and set(stores) == {"view", "graph_engine", "qdrant", "graph", "facts"}
    assert isinstance(result["events"], int) and result["events"] > 120
    assert isinstance(result["view_nodes"], int) and result["view_nodes"] >= 120


def test_the_hashes_see_a_missing_event() -> None:
    turns = make_turns(30, 2, texts(None))
    events, _ = derive_turns([Record("t", 0, i, 0, None, t) for i, t in enumerate(turns)], "engram.memory")
    hashes = []
    for kept in (events, events[:-1]):
        view, engine = MemoryView(), GraphEngine()
        view.apply(kept)
        engine.apply(kept)
        hashes.append((view_content_hash(view), engine.store.content_hash()))
    assert hashes[0][0] != hashes[1][0] and hashes[0][1] != hashes[1][1]
