"""`engram demo`: the pipeline end to end on the embedded stand-ins.

Starts the stand-ins and one worker, publishes the bundled sample (turns, code changes, a few bad
messages, then the sample questions), waits until every stage has processed it, summarizes, and
stops everything it started. Progress goes to stderr; `--json` prints one object on stdout.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.processors.dreaming.config import HOUR_MS
from engram.schemas.changes import change_as, kind_of
from engram.schemas.codec import AvroCodec
from engram.schemas.records import (
    CompiledContext,
    DeadLetter,
    EdgeRemoved,
    EdgeUpserted,
    MemoryEvent,
    NodeRemoved,
    NodeUpserted,
    RuleCommitted,
    RuleRejected,
)
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.replies import request_contexts
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sample import SampleBundle, load_sample
from engram.streams.sealing import eventlog_reader

Progress = Callable[[str], None]


class DemoTimeoutError(RuntimeError):
    """The pipeline did not process the sample in time; the message says which stage lagged."""


@dataclass
class DemoReport:
    events_in: int = 0
    events_logged: int = 0
    dead_letters: int = 0
    dead_letter_reasons: list[str] = field(default_factory=list)
    memory_events: int = 0
    memory_events_by_kind: dict[str, int] = field(default_factory=dict)
    nodes: int = 0
    edges: int = 0
    sinks_applied: dict[str, int] = field(default_factory=dict)
    contexts: list[dict[str, Any]] = field(default_factory=list)
    dreams: dict[str, Any] = field(default_factory=dict)
    metrics_url: str = ""
    facts_url: str = ""
    scrape: dict[str, float] = field(default_factory=dict)  # every engram_* metric after the run
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def publish_sample(config: EngramConfig, sample: SampleBundle) -> int:
    """Publish inputs (not the questions); returns how many messages were sent."""
    turn_codec: AvroCodec[Any] = AvroCodec("ConversationTurn")
    code_codec: AvroCodec[Any] = AvroCodec("CodeChange")
    publisher = Publisher(config.bootstrap_servers)
    names = config.topics
    for turn in sample.turns:
        publisher.publish(names.turns, turn["user_id"].encode(), turn_codec.encode(turn))
    for change in sample.code:
        publisher.publish(names.code, change["repo"].encode(), code_codec.encode(change))
    for garbage in sample.garbage:
        publisher.publish(names.turns, b"demo-garbage", garbage)
    return publisher.flush()


def logged_inputs(config: EngramConfig) -> int:
    reader = eventlog_reader(config)
    names = config.topics
    present = set(reader.topics())
    return sum(
        1
        for topic in (names.turns, names.code)
        if topic in present
        for partition in reader.partitions(topic)
        for _ in reader.read_partition(topic, partition)
    )


def ingested(worker: WorkerProcess) -> float:
    exposition = worker.scrape()
    return metric_value(exposition, "engram_ingest_messages_total") if exposition else 0.0


def sinks_caught_up(worker: WorkerProcess, report: DemoReport) -> bool:
    exposition = worker.scrape() or ""
    applied: dict[str, int] = {}
    for sink in ("qdrant", "graph"):
        value = metric_value(exposition, "engram_sink_applied_total", {"sink": sink})
        if value:
            applied[sink] = int(value)
    report.sinks_applied = applied
    return bool(applied) and min(applied.values()) >= report.memory_events


def wait_for(what: str, check: Callable[[], bool], timeout_s: float, progress: Progress) -> None:
    deadline = time.monotonic() + timeout_s
    progress(f"waiting: {what}")
    while not check():
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout_s:.0f}s waiting for: {what}"
            raise DemoTimeoutError(msg)
        time.sleep(0.25)


def collect(config: EngramConfig, report: DemoReport) -> None:
    names = config.topics
    dl_codec: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
    letters = [dl_codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, names.deadletter)]
    report.dead_letters = len(letters)
    report.dead_letter_reasons = sorted(letter["reason"] for letter in letters)
    kinds, report.nodes, report.edges = count_memory(config)
    report.memory_events = sum(kinds.values())
    report.memory_events_by_kind = dict(sorted(kinds.items()))


def count_memory(config: EngramConfig) -> tuple[Counter[str], int, int]:
    """MemoryEvents on engram.memory by kind, and the distinct live node and edge ids they leave."""
    mem_codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    kinds: Counter[str] = Counter()
    nodes: set[str] = set()
    edges: set[str] = set()
    for message in read_topic(config.bootstrap_servers, config.topics.memory, timeout_s=60):
        event = mem_codec.decode(message.value() or b"")
        kinds[kind_of(event).rsplit(".", 1)[-1]] += 1  # every kind, an unknown one too
        if (node := change_as(event, NodeUpserted)) is not None:
            nodes.add(node["node_id"])
        elif (gone := change_as(event, NodeRemoved)) is not None:
            nodes.discard(gone["node_id"])
        elif (edge := change_as(event, EdgeUpserted)) is not None:
            edges.add(edge["edge_id"])
        elif (cut := change_as(event, EdgeRemoved)) is not None:
            edges.discard(cut["edge_id"])
    return kinds, len(nodes), len(edges)


def dream_summary(config: EngramConfig, worker: WorkerProcess) -> dict[str, Any]:
    """What the worker's dreams did, from engram.memory: clusters consolidated into gists (with the
    episodes they cite), committed rules with their evidence, rejected candidates with the stage and
    reason, and how many episodes went dormant and came back."""
    mem_codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    gists: dict[str, dict[str, Any]] = {}
    cites: Counter[str] = Counter()
    rules: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    kinds: Counter[str] = Counter()
    for message in read_topic(config.bootstrap_servers, config.topics.memory, timeout_s=60):
        event = mem_codec.decode(message.value() or b"")
        kinds[kind_of(event).rsplit(".", 1)[-1]] += 1
        if (node := change_as(event, NodeUpserted)) is not None and node["kind"] in ("gist", "profile"):
            gists[node["node_id"]] = {"kind": node["kind"], "text": node["text"]}
        elif (edge := change_as(event, EdgeUpserted)) is not None and edge["edge_type"] in ("CITES", "ABOUT"):
            cites[edge["src"]] += 1
        elif (rule := change_as(event, RuleCommitted)) is not None:
            rules.append({"text": rule["text"], "reason": rule["reason"], "cited_episodes": rule["evidence_node_ids"]})
        elif (no := change_as(event, RuleRejected)) is not None:
            rejected.append({"text": no["text"], "stage": no["stage"], "reason": no["reason"]})
    exposition = worker.scrape() or ""
    return {
        "dreams_run": {
            t: int(metric_value(exposition, "engram_dreams_total", {"trigger": t})) for t in ("idle", "window")
        },
        "clusters": [{**g, "cited_episodes": cites[n]} for n, g in gists.items()],
        "rules_committed": rules,
        "rejected": rejected,
        "dormant": kinds["NodeDormant"],
        "reawakened": kinds["NodeReawakened"],
    }


def context_summary(compiled: CompiledContext) -> dict[str, Any]:
    return {
        "query": compiled["query"],
        "route": compiled["route"],
        "route_reason": compiled["route_reason"],
        "slb_hit": compiled["cache_hit"],
        "fallbacks": list(compiled["fallbacks"]),
        "total_tokens": compiled["total_tokens"],
        "items": [
            {
                "text": item["text"],
                "kind": item["kind"],
                "score": round(item["score"], 4),
                "provenance": [f"{p['topic']}/{p['partition']}/{p['offset']}" for p in item["provenance"]],
            }
            for item in compiled["items"]
        ],
    }


def ask_questions(config: EngramConfig, sample: SampleBundle, timeout_s: float) -> list[dict[str, Any]]:
    ids = [r["request_id"] for r in sample.requests]
    answers = request_contexts(config, sample.requests, timeout_s)
    missing = [r["query"] for r in sample.requests if r["request_id"] not in answers]
    if missing:
        msg = f"no compiled context within {timeout_s:.0f}s for: {missing}"
        raise DemoTimeoutError(msg)
    return [context_summary(answers[i]) for i in ids]


def run_demo(root: Path, progress: Progress, timeout_s: float = 120.0) -> DemoReport:
    from engram.infra.config import StackConfig
    from engram.infra.launcher import EmbeddedStack

    started = time.monotonic()
    report = DemoReport()
    sample = load_sample()
    progress(f"starting the embedded stack under {root}")
    with EmbeddedStack(StackConfig(root=root / "stack")) as stack:
        config = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(),
            falkordb_host=stack.require_falkordb()[0],
            falkordb_port=stack.require_falkordb()[1],
            data_dir=root / "data",
            app_id="engram-demo",
            partitions=2,
            web_port=free_port(),
            broker_profile="standin",
            batch_within_s=0.1,
            # The sample's sessions lie days apart: a 6-hour T_decay lets its dreams forget something.
            dream_decay_ms=6 * HOUR_MS,
        )
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        progress(f"broker at {config.bootstrap_servers}; starting a worker (web port {config.web_port})")
        with WorkerProcess(config, root / "worker.log") as worker:
            report.metrics_url = worker.metrics_url
            report.facts_url = f"http://{config.web_host}:{config.web_port}/facts?user={sample.turns[0]['user_id']}"
            progress(f"while the demo runs: metrics at {report.metrics_url}, facts at {report.facts_url}")
            report.events_in = publish_sample(config, sample)
            progress(f"published {report.events_in} messages ({len(sample.garbage)} deliberately malformed)")
            valid = len(sample.turns) + len(sample.code)
            wait_for(
                f"{valid} valid inputs in the event log", lambda: logged_inputs(config) >= valid, timeout_s, progress
            )
            wait_for(
                f"{valid} inputs processed into memory events", lambda: ingested(worker) >= valid, timeout_s, progress
            )
            report.events_logged = logged_inputs(config)
            collect(config, report)
            wait_for(
                f"{report.memory_events} memory events applied by every sink",
                lambda: sinks_caught_up(worker, report),
                timeout_s,
                progress,
            )
            progress(f"asking {len(sample.requests)} questions")
            report.contexts = ask_questions(config, sample, timeout_s)
            report.dreams = dream_summary(config, worker)
            report.scrape = scrape_values(worker.scrape() or "")
    report.seconds = round(time.monotonic() - started, 2)
    return report


def scrape_values(exposition: str) -> dict[str, float]:
    """Every ``engram_*`` metric of a scrape, summed over its labels (a histogram by its count)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(exposition):
        if not family.name.startswith("engram_"):
            continue
        name = f"{family.name}_total" if family.type == "counter" else family.name
        wanted = f"{family.name}_count" if family.type == "histogram" else name
        out[name] = sum(s.value for s in family.samples if s.name == wanted)
    return dict(sorted(out.items()))


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def one_line(text: str, limit: int) -> str:
    flat = " / ".join(part.strip() for part in text.splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def print_report(report: DemoReport) -> None:
    out = sys.stdout
    print("Engram demo", file=out)
    print(f"  inputs published      {report.events_in}", file=out)
    print(f"  inputs in the log     {report.events_logged}", file=out)
    print(f"  dead letters          {report.dead_letters}", file=out)
    for reason in report.dead_letter_reasons:
        print(f"    - {reason}", file=out)
    print(f"  memory events         {report.memory_events}  {report.memory_events_by_kind}", file=out)
    print(f"  nodes / edges         {report.nodes} / {report.edges}", file=out)
    print(f"  applied by sinks      {report.sinks_applied}", file=out)
    for ctx in report.contexts:
        print(f"  ask: {ctx['query']}", file=out)
        print(f"    route {ctx['route']} ({ctx['route_reason']}), slb_hit={ctx['slb_hit']}", file=out)
        for item in ctx["items"]:
            print(
                f"    [{item['score']:.3f}] {one_line(item['text'], 100)}  <- {', '.join(item['provenance'][:2])}",
                file=out,
            )
    dreams = report.dreams
    if dreams:
        print(f"  dreams                {dreams['dreams_run']}: {len(dreams['clusters'])} consolidated, "
              f"{len(dreams['rules_committed'])} rules, {len(dreams['rejected'])} rejected, "
              f"{dreams['dormant']} dormant, {dreams['reawakened']} re-awakened", file=out)  # fmt: skip
        for rule in dreams["rules_committed"]:
            print(f"    rule: {rule['text']}", file=out)
        for no in dreams["rejected"]:
            print(f"    rejected ({no['stage']}): {one_line(no['text'], 60)} -- {no['reason']}", file=out)
    print(f"  metrics were at       {report.metrics_url} (Grafana's dashboard charts them in compose)", file=out)
    print(f"  facts were at         {report.facts_url}", file=out)
    print(f"  took {report.seconds}s", file=out)
