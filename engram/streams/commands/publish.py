"""`engram publish turns FILE.jsonl` and `engram import locomo FILE|DIR`: a producer's own input.

Each turn is checked exactly as a worker admits it (encoded, decoded and validated by
`processors.intake.admit`), so a line that would be dead-lettered is reported here instead, with
its line number and the reason; every valid turn is published (keyed by user), with a progress bar
on stderr and the broker's delivery count at the end. The exit code is 1 when any line was
refused, 0 otherwise. Broker and topics come from the ENGRAM_* environment, like a worker's, over the
stack `engram up` left running (streams/local.py).

A JSONL line is one ConversationTurn (`schemas/avro/ConversationTurn.avsc`); the fields with
defaults (agent_id, flow_id, layer, causal_parent_ids, tool_calls, metadata) may be left out, and
``turn_id`` defaults to ``<session_id>-<turn_index>``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.streams.local import add_broker_flag, command_config

DEFAULTS: dict[str, Any] = {
    "agent_id": None, "flow_id": None, "layer": "USER", "causal_parent_ids": [], "tool_calls": [], "metadata": {},
}  # fmt: skip


def register(sub: Any) -> None:
    publish = sub.add_parser("publish", help="publish your own input (turns from a JSONL file)")
    kinds = publish.add_subparsers(dest="kind", required=True, metavar="KIND")
    turns = kinds.add_parser("turns", help="one ConversationTurn per JSONL line")
    turns.add_argument("file", type=Path)
    _common(turns)
    turns.set_defaults(func=run_turns)
    imports = sub.add_parser("import", help="import a dataset's conversations as turns")
    sources = imports.add_subparsers(dest="source", required=True, metavar="SOURCE")
    locomo = sources.add_parser("locomo", help="LoCoMo: a conversation file, locomo10.json, or a folder of them")
    locomo.add_argument("path", type=Path)
    _common(locomo)
    locomo.set_defaults(func=run_locomo)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="check every line, publish nothing")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_broker_flag(parser)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A line that is not JSON, and why."""

    reason: str


@dataclass
class Outcome:
    valid: list[tuple[bytes, bytes]] = field(default_factory=list)  # (key, encoded turn)
    refused: list[str] = field(default_factory=list)


def check_turns(numbered: Iterable[tuple[int, Any]], codec: Any) -> Outcome:
    """Each (line number, parsed object) checked as a worker would admit it."""
    from engram.processors.intake import Accepted, admit
    from engram.schemas.codec import CodecError

    out = Outcome()
    for number, raw in numbered:
        if isinstance(raw, Unreadable):
            out.refused.append(f"line {number}: {raw.reason}")
            continue
        if not isinstance(raw, dict):
            out.refused.append(f"line {number}: not a JSON object")
            continue
        turn = {**DEFAULTS, **raw}
        if "turn_id" not in turn and "session_id" in turn and "turn_index" in turn:
            turn["turn_id"] = f"{turn['session_id']}-{turn['turn_index']}"
        try:
            value = codec.encode(turn)
        except CodecError as exc:
            out.refused.append(f"line {number}: {exc}")
            continue
        verdict = admit(codec, "ConversationTurn", value)
        if isinstance(verdict, Accepted):
            out.valid.append((str(turn["user_id"]).encode(), value))
        else:
            out.refused.append(f"line {number}: {verdict.reason}")
    return out


def jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except ValueError as exc:
                yield number, Unreadable(f"invalid JSON: {exc}")


def run_turns(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        print(f"no such file: {args.file}", file=sys.stderr)
        return 2
    return _publish(args, jsonl(args.file))


def run_locomo(args: argparse.Namespace) -> int:
    from engram.benchmarks.locomo_data import locomo_conversations
    from engram.benchmarks.locomo_reader import LocomoFormatError, conversation_turns, flat_conversations

    if args.path.is_dir():
        conversations = locomo_conversations(args.path)
    else:
        conversations = flat_conversations(json.loads(args.path.read_text(encoding="utf-8")), args.path.stem)
    if not conversations:
        print(f"no LoCoMo conversation in {args.path}", file=sys.stderr)
        return 2
    turns: list[tuple[int, Any]] = []
    for name, data in conversations:
        try:
            turns.extend((len(turns) + 1, dict(turn)) for turn in conversation_turns(data, name))
        except LocomoFormatError as exc:
            print(f"conversation {name}: {exc}", file=sys.stderr)
            return 2
    return _publish(args, turns)


def _publish(args: argparse.Namespace, numbered: Iterable[tuple[int, Any]]) -> int:
    from tqdm import tqdm

    from engram.streams.admin import Publisher
    from engram.streams.codecs import TopicCodecs

    config = command_config(os.environ, args)
    codecs = TopicCodecs.for_config(config)
    outcome = check_turns(numbered, codecs.turns)
    for reason in outcome.refused:
        print(reason, file=sys.stderr)
    delivered = 0
    if not args.dry_run and outcome.valid:
        publisher = Publisher.for_config(config)
        for key, value in tqdm(outcome.valid, desc="publishing", unit="turn", file=sys.stderr, disable=args.json):
            publisher.publish(config.topics.turns, key, value)
        delivered = publisher.flush()
    summary = {"valid": len(outcome.valid), "refused": len(outcome.refused), "delivered": delivered,
               "topic": config.topics.turns, "dry_run": args.dry_run}  # fmt: skip
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    elif args.dry_run:
        print(f"{len(outcome.valid)} valid turns (dry run: nothing published); {len(outcome.refused)} refused")
    else:
        print(f"{delivered} of {len(outcome.valid)} valid turns delivered to {config.topics.turns}; "
              f"{len(outcome.refused)} refused")  # fmt: skip
    return 1 if outcome.refused else 0
