"""Dreaming on LoCoMo: memory before and after the dreams, and what the dreams did.

Each conversation (``--data``) goes through the worker's own steps in process: the Trace and the
facts step (``streams.steps.derive_turns``), then the memory agent's dream step
(``streams.dream_step.DreamStep``) over the resulting engram.memory in order, so the dreams fire on
their event-time triggers (a session idle for T_idle, the daily window) exactly as in a worker.
The run ends when the last session has gone idle and its window has closed.

- **before**: the conversation's memory, no dream; **after**: the same plus every dream's events.
- Retrieval is the LoCoMo bench's hybrid search (``benchmarks.locomo``). After dreaming it searches
  as the compiler does on an SLB miss: live and archived rows together (a dormant episode that
  ranks is one the request re-awakens), episodes and consolidated nodes, each consolidated node
  followed by its cited episodes (``spread``). Recall counts episodes only.
- ``phi_eligible``: episodes eq. 15 allows to be dormant at the end (dormant or not);
  ``held_active``: the active episodes φ keeps, by the condition that fails (one can fail several).
- ``retention``: after ``--cycles`` more daily dream cycles (seed 000 §5.4), the share of the
  questions' evidence turns that are active or that their question re-awakens (among the first 10
  of its search); ``retention_of_found``: the same share among the evidence turns the question
  found in its top 10 before any dream (what dreaming could lose, as opposed to what retrieval
  never found). Both are means over conversations.
- ``usage`` (use it or lose it): the episodes active at the run's end, split by a coin derived from
  each id, are ``accessed`` (a compiled context holds them every ``--access-every-days``: a NodesAccessed on
  the log, folded as the dream step folds it) or ``unused``; after ``--cycles`` daily dreams, the
  share of each still active. ``control_*``: the same halves with no access event (the ablation).
  ``held_by_age_only``: the same over the episodes eq. 15 holds for their age alone at the end
  (the others stay active, used or not: a causal edge or an uncommitted concept holds them).
- ``dormant_bytes_in_ram`` (issue 50): what the worker's view still holds in RAM for the dormant
  nodes after dreaming (their vector rows and texts; ``held_in_ram`` gives the live nodes' beside
  them). As in a worker (``ENGRAM_VIEW_STORE``), each view after dreaming has a store of its own
  (an embedded Qdrant in a temporary folder, `processors.retrieval.stored`): the dormant nodes
  leave RAM for it, and the searches over the whole memory take its archive with the live rows
  (``dormant_in_store``: how many; ``store_bytes_on_disk``: the stores' folders). A dormant node's
  vector row stays while a live neighbour's contextual vector reads it (``held_in_ram``'s
  ``context_rows`` and ``context_bytes``). ``--in-ram`` keeps every node in RAM instead.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
from tqdm import tqdm

from engram.benchmarks.locomo import CATEGORIES, LAYERS, Question, budget_fill
from engram.benchmarks.locomo_data import locomo_conversations
from engram.benchmarks.locomo_reader import conversation_turns
from engram.benchmarks.retrieval_metrics import canonical_dia_id, normalize_evidence, recall_at
from engram.processors.dreaming.config import DAY_MS, HOUR_MS, PRESETS, DreamConfig
from engram.processors.dreaming.dream import Dreamer
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.prune import TOO_RECENT, phi
from engram.processors.dreaming.records import read_memory
from engram.processors.dreaming.report import DreamReport
from engram.processors.dreaming.schedule import DreamSchedule, DueDream
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.archive import DREAM_KINDS, WholeMemory, from_archive, spread
from engram.processors.retrieval.hybrid import PRESETS as SEARCH_PRESETS
from engram.processors.retrieval.hybrid import HybridConfig, hybrid_search
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView
from engram.processors.tokens import default_token_counter
from engram.processors.trace import EVENT_KIND
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event, nodes_accessed, stable_id
from engram.schemas.record import Record
from engram.schemas.records import NODES_ACCESSED, EventRef, MemoryEvent, NodeUpserted, RuleRejected
from engram.sinks.qdrant.hybrid_index import HybridIndex
from engram.streams.agents.ingest import group_by_key
from engram.streams.dream_step import SCHEDULE_PREFIX, DreamStep
from engram.streams.steps import derive_turns

MEMORY_TOPIC: Final = "engram.memory"
REQUESTS_TOPIC: Final = "engram.context.requests"
K: Final = 10
BATCH: Final = 500


VIEW_STORE: Final = "qdrant-edge (embedded), one per view, in a temporary folder (processors/retrieval/stored.py)"
HELD_IN_RAM: Final = (
    "vector rows and UTF-8 texts the worker's view holds for dormant and live nodes after dreaming "
    "(MemoryView.held_bytes: a lower bound, without index postings and record objects)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation JSON files")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="balanced", help="dreaming preset")
    parser.add_argument("--decay-days", type=float, default=None, help="T_decay in days (default: the preset's)")
    parser.add_argument("--cycles", type=int, default=500, help="dream cycles after the run, for retention")
    parser.add_argument("--budget", type=int, default=1000, help="token budget for budget_recall (cl100k)")
    parser.add_argument("--access-every-days", type=int, default=3,
                        help="days between accesses of the accessed half, for usage")  # fmt: skip
    parser.add_argument("--in-ram", action="store_true",
                        help="views without a store: every node, dormant ones included, stays in RAM")  # fmt: skip


@dataclass(slots=True)
class Views:
    """Makes the bench's views after dreaming: each with a store of its own in ``root`` (as a worker's
    view), or, without a root, all in RAM. ``close`` releases the stores."""

    root: Path | None
    stores: list[HybridIndex] = field(default_factory=list)

    def new(self, embedder: Embedder) -> MemoryView:
        if self.root is None:
            return MemoryView(embedder=embedder)
        store = HybridIndex.for_view(self.root / f"view-{len(self.stores)}", embedder.dim)
        self.stores.append(store)
        return MemoryView(embedder=embedder, store=store)

    def close(self) -> None:
        for store in self.stores:
            store.close()
        self.stores.clear()

    def disk_bytes(self) -> int:
        """What the newest view's store takes on disk (blocks allocated, not file sizes: the
        engine's files are preallocated)."""
        if self.root is None or not self.stores:
            return 0
        folder = self.root / f"view-{len(self.stores) - 1}"
        return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


@dataclass(slots=True)
class Dreamt:
    """One conversation after its dreams."""

    name: str
    memory: list[MemoryEvent]
    dreams: list[MemoryEvent]
    user: UserMemory
    end_ms: int
    questions: list[Question]
    dia_ids: dict[str, str]
    reports: list[DreamReport] = field(default_factory=list)


def dream_conversation(name: str, data: dict[str, Any], config: DreamConfig) -> Dreamt:
    """The conversation through the Trace, the facts step and the dream step, as a worker runs them."""
    turns = conversation_turns(data, name, caption_in_content=True)
    records = [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(turns)]
    memory = in_arrival_order(derive_turns(records, MEMORY_TOPIC)[0])
    reports: list[DreamReport] = []
    dreamer = Dreamer(config, default_token_counter().count, on_report=reports.append)
    step = DreamStep(dreamer)
    states: dict[str, Any] = {}
    dreams: list[MemoryEvent] = []
    inputs = [Record(MEMORY_TOPIC, 0, i, 0, None, e) for i, e in enumerate(memory)]
    for start in range(0, len(inputs), BATCH):
        writes, events = step.process(states, group_by_key(step, inputs[start : start + BATCH]))
        states.update({w.key: w.state for w in writes})
        dreams.extend(events)
    user = read_memory(name, states) or UserMemory.new(name)
    schedule = DreamSchedule.from_dict(states[f"{SCHEDULE_PREFIX}0"], config)
    last = max(e["event_time_ms"] for e in memory)
    end = last + config.idle_ms + config.window_ms  # the last session idle, its window closed
    for due in schedule.advance(end):
        dreams.extend(dreamer.dream(user, due))
    dia_ids = _dia_ids(memory)
    return Dreamt(name, memory, dreams, user, end, _questions(data, set(dia_ids.values())), dia_ids, reports)


def in_arrival_order(derived: list[MemoryEvent]) -> list[MemoryEvent]:
    """``derive_turns`` lists the Trace's events, then the facts step's; in a worker each turn's
    facts reach engram.memory right after its Trace events. A stable sort on the source turn's offset
    restores that order (a timer's prune, which cites no turn, stays after the decision before it)."""
    keyed: list[tuple[int, int, MemoryEvent]] = []
    last = 0
    for position, event in enumerate(derived):
        last = event["sources"][0]["offset"] if event["sources"] else last
        keyed.append((last, position, event))
    return [event for _, _, event in sorted(keyed, key=lambda item: (item[0], item[1]))]


def _dia_ids(events: Sequence[MemoryEvent]) -> dict[str, str]:
    out: dict[str, str] = {}
    for event in events:
        node = change_as(event, NodeUpserted)
        if node is not None and (dia := canonical_dia_id(node["properties"].get("dia_id", ""))) is not None:
            out[node["node_id"]] = dia
    return out


def _questions(data: dict[str, Any], existing: set[str]) -> list[Question]:
    out = []
    for item in data.get("qa", []):
        if item.get("category") in CATEGORIES:
            evidence = normalize_evidence(item.get("evidence", []), existing)
            if evidence:
                out.append(Question(str(item["question"]), int(item["category"]), tuple(evidence)))
    return out


@dataclass(slots=True)
class Scores:
    sums: dict[str, float] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, name: str, value: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + value
        self.counts[name] += 1

    def mean(self, name: str) -> float:
        return round(self.sums.get(name, 0.0) / max(self.counts[name], 1), 4)


def evaluate(
    run: Dreamt, embedder: Embedder, scores: Scores, budget: int, *, after: bool, views: Views | None = None
) -> MemoryView:
    """Recall@10 (all, multi-hop, temporal) and budget recall of one state of the memory (the view
    it searched, returned; after dreaming, one ``views`` makes)."""
    view = views.new(embedder) if after and views is not None else MemoryView(embedder=embedder)
    view.apply(run.memory + (run.dreams if after else []))
    suffix = "after" if after else "before"
    kinds = frozenset({EVENT_KIND, *DREAM_KINDS}) if after else frozenset({EVENT_KIND})
    search = replace(SEARCH_PRESETS["balanced"], timeout_ms=60_000.0, kinds=kinds)
    vectors = embedder.embed([q.text for q in run.questions])
    for q, vector in zip(run.questions, vectors, strict=True):
        ranking = (
            _ranking(view, q.text, vector, run.name, search) if after else _plain(view, q.text, vector, run, search)
        )
        episodes = [c for c in ranking if c.node_id in run.dia_ids]
        dia = [run.dia_ids[c.node_id] for c in episodes]
        gold = set(q.evidence)
        value = recall_at(dia, gold, K)
        scores.add(f"recall@10_{suffix}", value)
        scores.add(f"category_{q.category}_{suffix}", value)
        packed = [run.dia_ids[n] for n in budget_fill(ranking, view, budget) if n in run.dia_ids]
        scores.add(f"budget_recall@{budget}_{suffix}", recall_at(packed, gold, len(packed)))
    return view


def _plain(view: MemoryView, query: str, vector: Any, run: Dreamt, search: HybridConfig) -> list[Candidate]:
    return hybrid_search(
        view, query, search.pool, Viewer(run.name), LAYERS, query_vector=vector, config=search
    ).candidates


def _ranking(view: MemoryView, query: str, vector: Any, user: str, search: HybridConfig) -> list[Candidate]:
    """As the compiler searches on an SLB miss: live and archived rows together (a dormant node
    that ranks is re-awakened), then the consolidated nodes' cited episodes after them."""
    found = hybrid_search(
        WholeMemory(view), query, search.pool, Viewer(user), LAYERS, query_vector=vector, config=search
    )
    return spread(view, from_archive(view, found.candidates, K), vector, Viewer(user), LAYERS)


def retention(
    run: Dreamt, embedder: Embedder, config: DreamConfig, cycles: int, views: Views | None = None
) -> tuple[float, float]:
    """After ``cycles`` more daily dreams: the share of evidence turns active or re-awakened by their
    question, and that share among the evidence turns their question found (top 10) before any dream."""
    dreamer = Dreamer(config, default_token_counter().count)
    extra: list[MemoryEvent] = []
    for cycle in range(1, cycles + 1):
        extra.extend(dreamer.dream(run.user, DueDream(run.end_ms + cycle * DAY_MS, run.name, "window")))
    view = views.new(embedder) if views is not None else MemoryView(embedder=embedder)
    view.apply(run.memory + run.dreams + extra)
    before = MemoryView(embedder=embedder)
    before.apply(run.memory)
    by_dia = {dia: node for node, dia in run.dia_ids.items()}
    kept: Counter[str] = Counter()
    vectors = embedder.embed([q.text for q in run.questions])
    search = replace(SEARCH_PRESETS["balanced"], timeout_ms=60_000.0, kinds=frozenset({EVENT_KIND, *DREAM_KINDS}))
    plain = replace(search, kinds=frozenset({EVENT_KIND}))
    for q, vector in zip(run.questions, vectors, strict=True):
        woken = {c.node_id for c in _ranking(view, q.text, vector, run.name, search)[:K] if view.is_dormant(c.node_id)}
        found = {c.node_id for c in _plain(before, q.text, vector, run, plain)[:K]}
        for dia in q.evidence:
            node = by_dia[dia]
            reached = int(not view.is_dormant(node) or node in woken)
            kept.update({"total": 1, "kept": reached})
            if node in found:
                kept.update({"found": 1, "found_kept": reached})
    return kept["kept"] / max(kept["total"], 1), kept["found_kept"] / max(kept["found"], 1)


def usage(run: Dreamt, config: DreamConfig, cycles: int, every_days: int) -> Counter[str]:
    """Use it or lose it (see the module docstring): counts of the episodes in each half
    (``accessed``, ``unused``) and of those still active after ``cycles`` daily dreams, with the
    accesses (``*_kept``) and without them (``control_*_kept``); the same prefixed ``aged_`` for
    the episodes eq. 15 holds for their age alone at the run's end (the others stay active used or
    not: a causal edge or an uncommitted concept holds them). Runs on copies of ``run.user``."""
    graph = run.user.graph
    active = sorted(graph.active(), key=lambda e: e.arrival)
    aged = {e.node_id for e in active if phi(graph, e, run.end_ms, config).failing == (TOO_RECENT,)}
    halves: dict[str, list[str]] = {"accessed": [], "unused": []}
    for episode in active:  # a coin per episode: alternate turns would split the speakers instead
        halves["accessed" if int(stable_id("usage", episode.node_id)[-1], 16) % 2 else "unused"].append(episode.node_id)
    groups = {"": halves, "aged_": {half: [n for n in ids if n in aged] for half, ids in halves.items()}}
    out = Counter({f"{group}{half}": len(ids) for group, split in groups.items() for half, ids in split.items()})
    dreamer = Dreamer(config, default_token_counter().count)
    for arm, accessing in (("", True), ("control_", False)):
        memory = copy.deepcopy(run.user)
        for cycle in range(1, cycles + 1):
            at_ms = run.end_ms + cycle * DAY_MS
            if accessing and (cycle - 1) % max(1, every_days) == 0:  # a request an hour before the dream
                memory.fold(_access(run.name, halves["accessed"], at_ms - HOUR_MS, cycle))
            dreamer.dream(memory, DueDream(at_ms, run.name, "window"))
        episodes = memory.graph.episodes
        for group, split in groups.items():
            for half, ids in split.items():
                out[f"{group}{arm}{half}_kept"] = sum(1 for n in ids if not episodes[n].dormant)
    return out


def _access(user: str, node_ids: list[str], at_ms: int, n: int) -> MemoryEvent:
    """The NodesAccessed of the ``n``-th request of the usage ablation (its source: that request)."""
    request: EventRef = {"topic": REQUESTS_TOPIC, "partition": 0, "offset": n}
    return memory_event(user, at_ms, [request], NODES_ACCESSED, nodes_accessed(node_ids, f"usage-{n}"))


def usage_report(counts: Counter[str], cycles: int, every_days: int) -> dict[str, Any]:
    """The shares of ``usage``'s counts (summed over conversations) still active in each half."""

    def shares(group: str) -> dict[str, Any]:
        kept = {f"{arm}{half}_kept": round(counts[f"{group}{arm}{half}_kept"] / max(counts[f"{group}{half}"], 1), 4)
                for arm in ("", "control_") for half in ("accessed", "unused")}  # fmt: skip
        return {"accessed": counts[f"{group}accessed"], "unused": counts[f"{group}unused"], **kept}

    return {"cycles": cycles, "access_every_days": every_days, **shares(""), "held_by_age_only": shares("aged_")}


def census(run: Dreamt, config: DreamConfig) -> dict[str, Any]:
    graph = run.user.graph
    eligible = 0
    held: Counter[str] = Counter()
    for episode in graph.episodes.values():
        verdict = phi(graph, episode, run.end_ms, config)
        eligible += int(verdict.eligible)
        if not episode.dormant:
            held.update(verdict.failing)
    return {
        "phi_eligible": eligible,
        "dormant": sum(1 for e in graph.episodes.values() if e.dormant),
        "held_active": dict(held),
        "concepts_committed": len(graph.committed()),
        "concepts": len(graph.concepts),
    }


def report_codes(events: Sequence[MemoryEvent]) -> Counter[str]:
    """Rejected candidates by reason code, each candidate once (its last rejection)."""
    last = {
        r["rule_id"]: r["stage"].rsplit(":", 1)[-1] for e in events if (r := change_as(e, RuleRejected)) is not None
    }
    return Counter(last.values())


def live_nodes(events: Sequence[MemoryEvent]) -> int:
    view = MemoryView()
    view.apply(events)
    return sum(1 for r in view.records() if view.is_searchable(r.node_id))


def run(args: argparse.Namespace) -> dict[str, object]:
    started = time.perf_counter()
    config = PRESETS[args.preset]
    if args.decay_days is not None:
        config = replace(config, decay_ms=int(args.decay_days * DAY_MS))
    found = locomo_conversations(args.data)
    if not found:
        msg = f"no LoCoMo conversations in {args.data}"
        raise SystemExit(msg)
    from engram.processors.embedding import default_embedder

    embedder = default_embedder()
    scores = Scores()
    totals: Counter[str] = Counter()
    held: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    per: dict[str, dict[str, Any]] = {}
    retained: list[float] = []
    retained_found: list[float] = []
    used: Counter[str] = Counter()
    in_ram: Counter[str] = Counter()
    dream_s = 0.0
    with contextlib.ExitStack() as stack:
        root = None if args.in_ram else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="engram-dream-")))
        views = Views(root)
        stack.callback(views.close)
        for name, data in tqdm(found, desc="dream", unit="conversation", disable=None):
            t0 = time.perf_counter()
            result = dream_conversation(name, data, config)
            dream_s += time.perf_counter() - t0
            evaluate(result, embedder, scores, args.budget, after=False)
            dreamt = evaluate(result, embedder, scores, args.budget, after=True, views=views)
            for side, dormant in (("dormant", True), ("live", False)):
                nodes, held_bytes = dreamt.held_bytes(dormant=dormant)
                in_ram.update({f"{side}_nodes": nodes, f"{side}_bytes": held_bytes})
            in_ram["dormant_in_store"] += len(dreamt.stubs())
            context_rows, context_bytes = dreamt.context_rows()
            in_ram.update({"context_rows": context_rows, "context_bytes": context_bytes})
            in_ram["store_bytes_on_disk"] += views.disk_bytes()
            counted = census(result, config)
            before, after = live_nodes(result.memory), live_nodes(result.memory + result.dreams)
            totals.update({"nodes_before": before, "nodes_active_after": after, "phi_eligible": counted["phi_eligible"],
                           "dormant": counted["dormant"], "concepts_committed": counted["concepts_committed"],
                           "concepts": counted["concepts"], "dreams": len(result.reports)})  # fmt: skip
            held.update(counted["held_active"])
            graph = result.user.graph
            kinds.update(n.kind for n in graph.consolidated.values())
            rejected.update(report_codes(result.dreams))
            in_use = usage(result, config, args.cycles, args.access_every_days)  # before retention dreams on
            used.update(in_use)
            share, of_found = retention(result, embedder, config, args.cycles, views)
            retained.append(share)
            retained_found.append(of_found)
            per[name] = {"nodes_before": before, "nodes_active_after": after, **counted, "retention": round(share, 4),
                         "retention_of_found": round(of_found, 4),
                         "usage": usage_report(in_use, args.cycles, args.access_every_days)}  # fmt: skip
    categories = {1: "multi_hop_recall@10", 2: "temporal_recall@10"}
    sides = ("before", "after")
    budget = f"budget_recall@{args.budget}"
    return {
        "conversations": len(per),
        "config": {"idle_ms": config.idle_ms, "window_ms": config.window_ms, "decay_ms": config.decay_ms,
                   "min_cluster": config.min_cluster},  # fmt: skip
        **{k: totals[k] for k in ("nodes_before", "nodes_active_after", "phi_eligible", "dormant")},
        "active_ratio": round(totals["nodes_active_after"] / max(totals["nodes_before"], 1), 4),
        "dormant_over_phi_eligible": round(totals["dormant"] / max(totals["phi_eligible"], 1), 4),
        "held_active_by_reason": dict(sorted(held.items())),
        "concepts_committed": totals["concepts_committed"],
        "concepts": totals["concepts"],
        "rules_committed": kinds.get("rule", 0),
        "consolidated_nodes": dict(sorted(kinds.items())),
        "rules_rejected": dict(sorted(rejected.items())),
        "dreams": totals["dreams"],
        **{f"recall@10_{s}": scores.mean(f"recall@10_{s}") for s in ("before", "after")},
        **{f"{label}_{s}": scores.mean(f"category_{c}_{s}") for c, label in categories.items() for s in sides},
        **{f"{budget}_{s}": scores.mean(f"{budget}_{s}") for s in sides},
        "budget_method": f"greedy fill of the ranking into {args.budget} cl100k tokens (dreamed nodes cost tokens)",
        "retention": round(float(np.mean(retained)), 4) if retained else 0.0,
        "retention_of_found": round(float(np.mean(retained_found)), 4) if retained_found else 0.0,
        "retention_cycles": args.cycles,
        "usage": usage_report(used, args.cycles, args.access_every_days),
        "dormant_bytes_in_ram": in_ram["dormant_bytes"],
        "dormant_in_store": in_ram["dormant_in_store"],
        "store_bytes_on_disk": in_ram["store_bytes_on_disk"],
        "view_store": "none (--in-ram)" if args.in_ram else VIEW_STORE,
        "held_in_ram": {**dict(in_ram), "what": HELD_IN_RAM},
        "per_conversation": per,
        "dream_seconds": round(dream_s, 2),
        "seconds": round(time.perf_counter() - started, 2),
    }  # fmt: skip
