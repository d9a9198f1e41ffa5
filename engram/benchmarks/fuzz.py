"""Fuzz: malformed and borderline inputs on every input topic of a running worker.

Starts the embedded stack and one worker, sends ``--n`` inputs cycling through the kinds of
`benchmarks.fuzz_inputs` (truncated or corrupted Avro, unknown fingerprints, another contract,
empty values, content over the limits, invalid UTF-8, missing or duplicate ids, times far in the
past or the future, unknown causal parents, binary, huge or unsupported code, absurd budgets, no
layers, graph parameters that are not an object) to the turn, code, request and graph request
topics, and then accounts for each by its (topic, partition, offset): dead-lettered (a dead
letter names it, with its reason) or accepted (the event log archived it: the worker took it as
valid). A worker that dies is restarted and counted. ``unaccounted`` must be 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, Message, Producer
from tqdm import tqdm

from engram.benchmarks.fuzz_inputs import Case, Fuzzer
from engram.schemas.codec import AvroCodec
from engram.schemas.records import DeadLetter
from engram.streams.admin import ensure_topics, event_producer_settings, read_topic
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess, log_tail
from engram.streams.sealing import eventlog_reader

Position = tuple[str, int, int]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=500, help="inputs to send")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for every input's fate")


def send(config: EngramConfig, cases: list[Case]) -> dict[Position, Case]:
    """Publish every case; returns each one's position, from the broker's delivery reports."""
    producer = Producer({"bootstrap.servers": config.bootstrap_servers, **event_producer_settings(config)})
    sent: dict[Position, Case] = {}

    def delivered(case: Case) -> Any:
        def report(err: Any, message: Message) -> None:
            if err is None:
                sent[(message.topic() or "", message.partition() or 0, message.offset() or 0)] = case

        return report

    for case in tqdm(cases, desc="fuzz", unit="input", file=sys.stderr):
        try:
            producer.produce(case.topic, case.value, case.key, on_delivery=delivered(case))
        except KafkaException:  # over the client's or broker's size limit: never reaches a worker
            continue
        producer.poll(0)
    producer.flush(30)
    return sent


def fates(config: EngramConfig, sent: dict[Position, Case]) -> tuple[dict[Position, str], set[Position]]:
    """Dead letters by position (their reasons), and the positions the event log archived."""
    codec: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
    letters = {}
    for message in read_topic(config.bootstrap_servers, config.topics.deadletter):
        letter = codec.decode(message.value() or b"")
        letters[(letter["topic"], letter["partition"], letter["offset"])] = (
            f"{letter['error_type']}: {letter['reason']}"
        )
    reader = eventlog_reader(config)
    topics = sorted({topic for topic, _, _ in sent} & set(reader.topics()))
    archived = {(e["topic"], e["partition"], e["offset"]) for e in reader.read(topics)} if topics else set()
    return letters, archived


def run(args: argparse.Namespace) -> dict[str, object]:
    from engram.infra.config import StackConfig
    from engram.infra.launcher import EmbeddedStack

    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-fuzz-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack")) as stack,
    ):
        config = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(), falkordb_host=stack.require_falkordb()[0],
            falkordb_port=stack.require_falkordb()[1], app_id="engram-bench-fuzz", partitions=2,
            data_dir=Path(tmp) / "data", web_port=free_port(), broker_profile="standin", batch_within_s=0.1,
        )  # fmt: skip
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        worker = WorkerProcess(config, Path(tmp) / "worker.log").start()
        restarts = 0
        try:
            cases = Fuzzer(config.topics, args.seed).cases(args.n)
            sent = send(config, cases)
            deadline = time.monotonic() + args.timeout
            while True:
                if worker.wait_exit(0.0) is not None:
                    restarts += 1
                    print(f"the worker died; its log ends:\n{log_tail(worker.log_path, 40)}", file=sys.stderr)
                    worker = WorkerProcess(config, Path(tmp) / f"worker-{restarts}.log").start()
                letters, archived = fates(config, sent)
                unaccounted = [p for p in sent if p not in letters and p not in archived]
                if not unaccounted or time.monotonic() > deadline:
                    break
                time.sleep(1.0)
        finally:
            worker.stop()
    # The broker itself refuses a record over its size limit (the client's delivery report says so).
    return {**summary(sent, letters, archived, restarts, len(unaccounted)), "refused_by_broker": len(cases) - len(sent)}


def summary(sent: dict[Position, Case], letters: dict[Position, str], archived: set[Position], restarts: int,
            unaccounted: int) -> dict[str, object]:  # fmt: skip
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for position, case in sent.items():
        if position in letters:
            by_kind[case.kind]["dead_lettered"] += 1
            error_type = letters[position].split(":", 1)[0]
            reasons[error_type] += 1
            examples.setdefault(case.kind, letters[position][:200])
        elif position in archived:
            by_kind[case.kind]["accepted"] += 1
        else:
            by_kind[case.kind]["unaccounted"] += 1
    dead = sum(1 for p in sent if p in letters)
    accepted = sum(1 for p in sent if p in archived and p not in letters)
    return {
        "sent": len(sent), "dead_lettered": dead, "accepted": accepted,
        "unaccounted": unaccounted, "worker_restarts": restarts, "reasons": dict(reasons),
        "by_kind": {kind: dict(counts) for kind, counts in sorted(by_kind.items())}, "examples": examples,
    }  # fmt: skip
