"""LongMemEval retrieval with System 1 (LongMemEval's own retrieval protocol and official metrics).

For each non-abstention question (``_abs`` ids are skipped, as the official retrieval evaluation
does), the haystack sessions' turns become nodes of a fresh in-process ``MemoryView`` (text =
the turn's content only: session ids are never indexed, since every gold id starts with
"answer"). As in the official ``run_retrieval.py``, only user turns are keys by default.

Metrics, as the official ``eval_utils.evaluate_retrieval`` defines them
(``benchmarks.retrieval_metrics``), each a mean over questions:

- Session level: the hybrid search ranks turns; sessions are ranked by aggregating their turns'
  scores (max by default, as MaxP). ``recall_any@k`` (some gold session in the top k),
  ``recall_all@k`` (every gold session in the top k) and ``ndcg_any@k`` (binary relevance over the
  haystack), k = 5 and 10, against ``answer_session_ids``. (The official session-granularity run
  also drops an answer session none of whose user turns has ``has_answer``; this bench keeps every
  ``answer_session_ids`` entry, as it always has, so its numbers stay comparable over time.)
- Turn level: the turn ranking is the same retrieval's fused hybrid list of turn nodes
  (``hybrid_search`` candidates, best first; no session aggregation). Gold = the indexed turns
  with ``has_answer`` true in an answer session. ``turn_recall_any@k`` / ``turn_recall_all@k``,
  k = 5 and 10, are averaged over the ``turn_questions`` that have at least one gold turn: with
  user keys only, a question whose evidence is an assistant turn has none and is left out (the
  official script would score it any = 0, all = 1).
- Knowledge updates: over the ``knowledge-update`` questions (each has two or more answer
  sessions, the same fact stated again with a new value), ``knowledge_update_latest_first`` is
  the share whose newest answer session (by ``haystack_dates``, then ``answer_session_ids``
  order) ranks above every older one, and ``knowledge_update_latest_top5`` the share with the
  newest in the top 5; ``knowledge_update_by_half`` gives both for the even- and odd-numbered of
  them (file order), the split the ranking rule's threshold was chosen on.

Turns carry their session's date as event time (ms, read as UTC; the turn's index in the
haystack is added so a session's turns keep their order); without dates, the index alone. As the
Trace's event nodes do, they carry the date their text states (``processors.timeline``).

``by_question_type``: ``recall_all@5`` and ``ndcg_any@10`` (as above) for each question type.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final

from tqdm import tqdm

from engram.benchmarks import qdrant_lists
from engram.benchmarks.qdrant_lists import HotSetTally, StoreRanker, capped_view, in_store, store_fields
from engram.benchmarks.retrieval_metrics import ndcg_any_at, recall_all_at, recall_any_at
from engram.processors.embedding import default_embedder
from engram.processors.embedding.base import Embedder
from engram.processors.embedding.vectors import to_wire
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import PRESETS, Fusion, HybridConfig, hybrid_search, rank_lists
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView
from engram.processors.timeline import date_properties
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, EventRef, Layer, MemoryEvent

LAYERS: Final[tuple[Layer, ...]] = ("USER",)
USER: Final = "lme"


class Aggregate(StrEnum):
    MAX = "max"
    SUM = "sum"
    TOP3 = "top3"  # sum of the session's three best turns


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="LongMemEval .json or .json.gz")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="balanced")
    qdrant_lists.add_arguments(parser, "haystack")
    parser.add_argument("--aggregate", choices=[a.value for a in Aggregate], default=Aggregate.MAX.value)
    parser.add_argument("--roles", default="user", help="roles whose turns are indexed (official keys: user)")
    parser.add_argument("--limit", type=int, default=0, help="first N questions only (0 = all)")
    parser.add_argument(
        "--distractors", type=int, default=0,
        help="add N sessions of other questions to each haystack (a dev set from the oracle file)",
    )  # fmt: skip
    parser.add_argument("--exclude", type=Path, default=None, help="skip the question ids found in this file")


def load_questions(path: Path) -> list[dict[str, Any]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data = json.loads(raw)
    if not isinstance(data, list):
        msg = f"{path} is not a list of LongMemEval instances"
        raise SystemExit(msg)
    return [q for q in data if not str(q["question_id"]).endswith("_abs")]


def with_distractors(items: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Each item's haystack plus ``n`` sessions of *other* items, shuffled, all deterministic.

    Turns the oracle file (evidence sessions only, where any ranking is perfect) into a retrieval
    dev set. Borrowed sessions get fresh ids ("d<item>_<session>") that never start with "answer".
    Every session keeps its own date (a borrowed one, the date of its own timeline); an item
    without dates gets none."""
    pool = [(i, j) for i, item in enumerate(items) for j in range(len(item["haystack_sessions"]))]
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        others = sorted((p for p in pool if p[0] != i), key=lambda p: _draw(i, *p))[:n]
        sessions = [(str(sid), body, _draw(i, -1, k), _date(item, k)) for k, (sid, body) in enumerate(
            zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True))]  # fmt: skip
        sessions += [(f"d{a}_{b}", items[a]["haystack_sessions"][b], _draw(i, a, b), _date(items[a], b))
                     for a, b in others]  # fmt: skip
        sessions.sort(key=lambda s: s[2])
        dates = [s[3] for s in sessions]
        out.append(
            {
                **item,
                "haystack_session_ids": [s[0] for s in sessions],
                "haystack_sessions": [s[1] for s in sessions],
                "haystack_dates": dates if all(dates) else [],
            }
        )
    return out


def _date(item: dict[str, Any], session: int) -> str:
    dates = item.get("haystack_dates") or []
    return str(dates[session]) if session < len(dates) else ""


_DATE: Final = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})\D+(\d{1,2}):(\d{2})")


def session_time_ms(date: str) -> int:
    """A haystack date ("2023/05/30 (Tue) 22:16") as epoch ms, read as UTC."""
    found = _DATE.search(date)
    if found is None:
        msg = f"not a LongMemEval date: {date!r}"
        raise ValueError(msg)
    year, month, day, hour, minute = (int(g) for g in found.groups())
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


def _draw(*parts: int) -> bytes:
    """A deterministic pseudo-random sort key (no global RNG state)."""
    return hashlib.blake2b(":".join(map(str, parts)).encode(), digest_size=8).digest()


def excluded_ids(path: Path | None) -> frozenset[str]:
    """Question ids of the LongMemEval file at ``path`` (e.g. the test file), empty for None."""
    if path is None:
        return frozenset()
    return frozenset(str(q["question_id"]) for q in load_questions(path))


@dataclass(frozen=True, slots=True)
class Haystack:
    """One question's memory: the events to apply, each turn node's session id, and the gold turns
    (node ids of indexed turns with ``has_answer`` true in one of ``answer_session_ids``)."""

    events: list[MemoryEvent]
    sessions: dict[str, str]
    answer_turns: frozenset[str]


def haystack_events(item: dict[str, Any], embedder: Embedder, roles: frozenset[str]) -> Haystack:
    """Turn nodes (content only, embedded in one batch) and NEXT edges, with the gold turns."""
    turns: list[tuple[str, str, str, str]] = []  # node id, session id, role, content
    times: list[int] = []  # event time ms per turn
    gold_sessions = {str(s) for s in item["answer_session_ids"]}
    answer_turns: set[str] = set()
    dates = item.get("haystack_dates") or []
    starts = [session_time_ms(str(d)) for d in dates] if len(dates) == len(item["haystack_sessions"]) else None
    for s_index, (session_id, session) in enumerate(
        zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True)
    ):
        for t_index, turn in enumerate(session):
            if turn.get("role") in roles and str(turn.get("content", "")).strip():
                node_id = stable_id("lme", item["question_id"], s_index, t_index)
                turns.append((node_id, str(session_id), str(turn["role"]), str(turn["content"])))
                times.append(len(times) + (starts[s_index] if starts is not None else 0))
                if turn.get("has_answer") is True and str(session_id) in gold_sessions:
                    answer_turns.add(node_id)
    vectors = embedder.embed([t[3] for t in turns])
    events: list[MemoryEvent] = []
    sessions: dict[str, str] = {}
    previous: tuple[str, str] | None = None
    for offset, ((node_id, session_id, role, content), vector) in enumerate(zip(turns, vectors, strict=True)):
        sessions[node_id] = session_id
        source: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": offset}]
        properties = {"role": role, **date_properties(content, times[offset])}  # as the Trace's nodes
        node = node_upserted(node_id, "event", "USER", times[offset], text=content, user_id=USER,
                             vector=to_wire(vector), properties=properties)  # fmt: skip
        events.append(memory_event(USER, times[offset], source, NODE_UPSERTED, node))
        if previous is not None and previous[1] == session_id:
            edge = edge_upserted("NEXT", previous[0], node_id, "USER")
            events.append(memory_event(USER, times[offset], source, EDGE_UPSERTED, edge))
        previous = (node_id, session_id)
    return Haystack(events, sessions, frozenset(answer_turns))


def rank_sessions(ranking: Sequence[Candidate], sessions: dict[str, str], how: Aggregate) -> list[str]:
    per: dict[str, list[float]] = {}
    for cand in ranking:
        per.setdefault(sessions[cand.node_id], []).append(cand.score)

    def value(scores: list[float]) -> float:
        if how is Aggregate.MAX:
            return max(scores)
        top = sorted(scores, reverse=True)
        return sum(top if how is Aggregate.SUM else top[:3])

    order = {sid: i for i, sid in enumerate(per)}
    return sorted(per, key=lambda sid: (-value(per[sid]), order[sid]))


_PLAIN: Final = HybridConfig(
    context_hits=0, author_boost=0.0, newer_depth=0, when_boost=0.0, anchor_boost=0.0
)  # fusion alone
VARIANTS: Final[dict[str, HybridConfig | None]] = {
    "default": None,  # the preset under test
    "default+context": HybridConfig(),
    **{f"minmax_w{w}": replace(_PLAIN, vector_weight=w) for w in (0.3, 0.4, 0.5)},
    "rrf": replace(_PLAIN, fusion=Fusion.RRF),
}


KS: Final[tuple[int, ...]] = (5, 10)
SESSION_METRICS: Final = tuple(f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg_any") for k in KS)
TURN_METRICS: Final = tuple(f"turn_{m}@{k}" for m in ("recall_any", "recall_all") for k in KS)
# What the bm25/vector baselines and the comparison variants report (the headline reports all).
COMPARED: Final[tuple[str, ...]] = ("recall_any@5", "recall_any@10", "ndcg_any@10")
BY_TYPE: Final[tuple[str, ...]] = ("recall_all@5", "ndcg_any@10")  # also reported per question type


def session_metrics(ranked: Sequence[str], gold: set[str], corpus: Sequence[str]) -> dict[str, float]:
    """One question's official session-level metrics (``SESSION_METRICS``) for a session ranking."""
    out: dict[str, float] = {}
    for k in KS:
        out[f"recall_any@{k}"] = recall_any_at(ranked, gold, k)
        out[f"recall_all@{k}"] = recall_all_at(ranked, gold, k)
        out[f"ndcg_any@{k}"] = ndcg_any_at(ranked, gold, corpus, k)
    return out


def turn_metrics(ranked: Sequence[str], gold: frozenset[str]) -> dict[str, float]:
    """One question's turn-level recall (``TURN_METRICS``) of its ``has_answer`` turns in a turn ranking."""
    out: dict[str, float] = {}
    for k in KS:
        out[f"turn_recall_any@{k}"] = recall_any_at(ranked, gold, k)
        out[f"turn_recall_all@{k}"] = recall_all_at(ranked, gold, k)
    return out


KNOWLEDGE_UPDATE: Final = "knowledge-update"
UPDATE_METRICS: Final = ("latest_first", "latest_top5")


def answers_oldest_first(item: dict[str, Any]) -> list[str]:
    """``answer_session_ids`` by session date (``haystack_dates``), oldest first; ties and a
    haystack without dates keep the ids' own order."""
    answers = [str(s) for s in item["answer_session_ids"]]
    ids = [str(s) for s in item["haystack_session_ids"]]
    dates = item.get("haystack_dates") or []
    if len(dates) != len(ids):
        return answers
    when = {sid: session_time_ms(str(d)) for sid, d in zip(ids, dates, strict=True)}
    return sorted(answers, key=lambda sid: (when.get(sid, 0), answers.index(sid)))


def update_order(ranked: Sequence[str], answers_by_age: Sequence[str]) -> dict[str, float]:
    """One knowledge-update question (``UPDATE_METRICS``): ``latest_first`` is 1 when the newest
    answer session (last of ``answers_by_age``) ranks above every older one (a session not ranked
    counts as below all ranked ones; the newest must be ranked), ``latest_top5`` when it is in the
    top 5."""
    place = {sid: i for i, sid in enumerate(ranked)}
    newest, older = answers_by_age[-1], answers_by_age[:-1]
    unranked = len(ranked)
    ranked_newest = newest in place
    first = ranked_newest and all(place[newest] < place.get(o, unranked) for o in older)
    return {"latest_first": float(first), "latest_top5": float(ranked_newest and place[newest] < 5)}


@dataclass(slots=True)
class StoreRun:
    """``--qdrant-lists`` (``hot_turns`` None) or ``--hot-set``: the rankings read from Qdrant."""

    name: str
    hot_turns: int | None
    rankers: list[StoreRanker] = field(default_factory=list)
    held: int = 0
    total: int = 0


def _question(
    item: dict[str, Any], embedder: Embedder, config: HybridConfig, how: Aggregate, roles: frozenset[str],
    sums: dict[str, float], runs: Sequence[StoreRun] = (), hot: HotSetTally | None = None,
) -> None:  # fmt: skip
    haystack = haystack_events(item, embedder, roles)
    view = MemoryView()
    view.apply(haystack.events)
    qv = embedder.embed([item["question"]])[0]
    # The preset's pools, as in production; up to 2 x pool fused turns cover well over 10 sessions.
    result = hybrid_search(
        view, item["question"], 2 * config.pool, Viewer(USER), LAYERS, query_vector=qv, config=config
    )
    gold = {str(s) for s in item["answer_session_ids"]}
    corpus = [str(s) for s in item["haystack_session_ids"]]

    def add(prefix: str, ranking: Sequence[Candidate], agg: Aggregate) -> None:
        for name, value in session_metrics(rank_sessions(ranking, haystack.sessions, agg), gold, corpus).items():
            if not prefix or name in COMPARED:
                sums[prefix + name] = sums.get(prefix + name, 0.0) + value

    add("", result.candidates, how)
    turns = list(haystack.sessions)  # in the order the haystack gave them
    for run in runs:
        with in_store(haystack.events, turns, int(qv.shape[0]), run.hot_turns) as ranker:
            ranking = ranker.ranking(item["question"], qv, 2 * config.pool, Viewer(USER), LAYERS, config)
        run.rankers.append(ranker)
        run.held += len(turns) if run.hot_turns is None else min(len(turns), max(run.hot_turns, 0))
        run.total += len(turns)
        for name, value in session_metrics(rank_sessions(ranking, haystack.sessions, how), gold, corpus).items():
            sums[f"{run.name}:{name}"] = sums.get(f"{run.name}:{name}", 0.0) + value
    if hot is not None:  # the haystack in a view as the worker keeps it under ENGRAM_VIEW_HOT_TURNS
        with capped_view(hot.hot_turns) as capped:
            capped.apply(haystack.events)
            started = time.perf_counter()
            found = hybrid_search(capped, item["question"], 2 * config.pool, Viewer(USER), LAYERS, query_vector=qv,
                                  config=config)  # fmt: skip
            hot.latencies_ms.append((time.perf_counter() - started) * 1000.0)
            hot.add(capped, 1)
        hot_ranked = rank_sessions(found.candidates, haystack.sessions, how)
        for name, value in session_metrics(hot_ranked, gold, corpus).items():
            sums[f"view_hot_set:{name}"] = sums.get(f"view_hot_set:{name}", 0.0) + value
    kind = str(item.get("question_type", "unknown"))
    sums[f"type:{kind}:questions"] = sums.get(f"type:{kind}:questions", 0.0) + 1
    ranked = rank_sessions(result.candidates, haystack.sessions, how)
    for name, value in session_metrics(ranked, gold, corpus).items():
        if name in BY_TYPE:
            sums[f"type:{kind}:{name}"] = sums.get(f"type:{kind}:{name}", 0.0) + value
    if item.get("question_type") == KNOWLEDGE_UPDATE and len(item["answer_session_ids"]) > 1:
        half = "even" if sums.get("ku:questions", 0.0) % 2 == 0 else "odd"
        order = update_order(rank_sessions(result.candidates, haystack.sessions, how), answers_oldest_first(item))
        sums["ku:questions"] = sums.get("ku:questions", 0.0) + 1
        sums[f"ku:{half}:questions"] = sums.get(f"ku:{half}:questions", 0.0) + 1
        for name, value in order.items():
            for key in (f"ku:{name}", f"ku:{half}:{name}"):
                sums[key] = sums.get(key, 0.0) + value
    if haystack.answer_turns:  # nothing to recall at turn level otherwise (see the module docstring)
        sums["turn_questions"] = sums.get("turn_questions", 0.0) + 1
        for name, value in turn_metrics([c.node_id for c in result.candidates], haystack.answer_turns).items():
            sums[name] = sums.get(name, 0.0) + value
    add("bm25:", result.lists.get("bm25", []), how)
    add("vector:", result.lists.get("vector", []), how)
    for agg in Aggregate:
        add(f"cmp:default/{agg.value}:", result.candidates, agg)
        for name, variant in VARIANTS.items():
            if variant is not None:
                ranking, _ = rank_lists(view, item["question"], result.lists, LAYERS, variant, max_visits=1000)
                add(f"cmp:{name}/{agg.value}:", ranking, agg)


def run(args: argparse.Namespace) -> dict[str, object]:
    started = time.perf_counter()
    skip = excluded_ids(args.exclude)
    questions = [q for q in load_questions(args.data) if str(q["question_id"]) not in skip]
    if args.distractors > 0:
        questions = with_distractors(questions, args.distractors)
    if args.limit:
        questions = questions[: args.limit]
    embedder = default_embedder()
    # Sessions are the unit ranked here, so the session-context rerank (a within-session score
    # sum that surfaces reply turns) is off; a generous timeout keeps results load-independent.
    config = replace(PRESETS[args.preset], timeout_ms=60_000.0, context_hits=0)
    how = Aggregate(args.aggregate)
    roles = frozenset(r.strip() for r in args.roles.split(",") if r.strip())
    sums: dict[str, float] = {}
    runs = [StoreRun("lists_from_qdrant", None)] if getattr(args, "qdrant_lists", False) else []
    if getattr(args, "hot_set", None) is not None:
        runs.append(StoreRun("hot_set", args.hot_set))
    hot = HotSetTally(args.view_hot_turns) if getattr(args, "view_hot_turns", None) is not None else None
    for item in tqdm(questions, desc="longmemeval", unit="q", disable=None):
        _question(item, embedder, config, how, roles, sums, runs, hot)
    n, turn_n = len(questions), int(sums.get("turn_questions", 0.0))

    def mean(key: str, over: int = n) -> float:
        return round(sums.get(key, 0.0) / max(over, 1), 4)

    ku_n = int(sums.get("ku:questions", 0.0))
    halves = {
        half: {name: mean(f"ku:{half}:{name}", int(sums.get(f"ku:{half}:questions", 0.0))) for name in UPDATE_METRICS}
        | {"questions": int(sums.get(f"ku:{half}:questions", 0.0))}
        for half in ("even", "odd")
    }
    kinds = sorted({key.split(":")[1] for key in sums if key.startswith("type:")})
    by_type = {
        kind: {name: mean(f"type:{kind}:{name}", int(sums[f"type:{kind}:questions"])) for name in BY_TYPE}
        | {"questions": int(sums[f"type:{kind}:questions"])}
        for kind in kinds
    }
    comparison: dict[str, dict[str, float]] = {}
    for key in sorted(sums):
        if key.startswith("cmp:"):
            variant, metric = key[4:].rsplit(":", 1)
            comparison.setdefault(variant, {})[metric] = mean(key)
    from_qdrant: dict[str, object] = {
        run.name: {
            **({} if run.hot_turns is None else {"hot_turns_per_haystack": run.hot_turns}),
            **{name: mean(f"{run.name}:{name}") for name in SESSION_METRICS},
            **store_fields(run.rankers, run.held, run.total),
        }
        for run in runs
    }
    if hot is not None:
        from_qdrant["view_hot_set"] = {
            **{name: mean(f"view_hot_set:{name}") for name in SESSION_METRICS},
            **{f"{name}_change": round(mean(f"view_hot_set:{name}") - mean(name), 4) for name in SESSION_METRICS},
            **hot.fields(),
        }
    return {
        "path": "in-process",
        "protocol": "session- and turn-level retrieval (official eval_utils metrics), abstention questions skipped, "
        "session ids never indexed",
        **{name: mean(name) for name in SESSION_METRICS},
        **{name: mean(name, turn_n) for name in TURN_METRICS},
        "turn_questions": turn_n,
        "by_question_type": by_type,
        "knowledge_update_questions": ku_n,
        "knowledge_update_latest_first": mean("ku:latest_first", ku_n),
        "knowledge_update_latest_top5": mean("ku:latest_top5", ku_n),
        "knowledge_update_by_half": halves,
        "bm25_recall_any@5": mean("bm25:recall_any@5"),
        "bm25_ndcg_any@10": mean("bm25:ndcg_any@10"),
        "vector_recall_any@5": mean("vector:recall_any@5"),
        "vector_ndcg_any@10": mean("vector:ndcg_any@10"),
        "aggregate": how.value,
        "roles": sorted(roles),
        "comparison": comparison,
        "questions": len(questions),
        "distractors": args.distractors,
        "excluded": len(skip),
        "embedder": embedder.name,
        **from_qdrant,
        "seconds": round(time.perf_counter() - started, 2),
    }
