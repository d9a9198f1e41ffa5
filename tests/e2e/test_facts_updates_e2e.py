"""Issue 47, end to end: what is true now, through the broker and a worker subprocess.

Maya talks to her assistant over three sessions a few days apart: a seat preference that changes,
a manager's name she corrects, an interview date that moves. After the last session:
- the facts block of a compiled context and the facts API (``/facts``) state only the new values;
- the old values are in the decision log (engram.memory), each retracted with its rule and reason;
- for each question, the compiled context ranks the turn that says the new value above the turn
  that said the old one.
Noah mistypes his kitten's name and puts it right in a later session ("oops, Biscotti not Biscuit"):
the fact that said the wrong name is replaced (rule ``correct-a-value``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.schemas.records import CompiledContext, ConversationTurn, FactDecided
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess
from tests.e2e.support import ask_worker, publish_turns, standin_config
from tests.e2e.test_facts_e2e import decided, wait_ingested
from tests.e2e.test_trust_e2e import get

pytestmark = pytest.mark.e2e

T0 = 1_772_323_200_000  # 2026-03-01T00:00:00Z
DAY = 86_400_000
SESSIONS: list[tuple[int, list[tuple[str, str]]]] = [
    (0, [
        ("user", "I prefer window seats on long flights."),
        ("assistant", "Noted, window seats it is."),
        ("user", "My manager is Priya, she wants the roadmap soon."),
        ("user", "My interview with Shopify is on March 10."),
    ]),
    (3, [
        ("user", "I used to prefer window seats but now I prefer aisle seats on long flights."),
        ("assistant", "Aisle seats from now on."),
        ("user", "Correction: my manager is Dana, not Priya."),
    ]),
    (6, [
        ("user", "My interview got moved to March 12."),
        ("assistant", "Good luck on the 12th!"),
    ]),
]  # fmt: skip
QUESTIONS = [
    ("Which seats do I prefer on long flights?", "window seats on long flights", "aisle seats on long flights"),
    ("Who is my manager?", "My manager is Priya", "my manager is Dana"),
    ("When is my interview with Shopify?", "on March 10", "moved to March 12"),
]
NOW = {("prefers", "aisle seats on long flights"), ("has_manager", "Dana"), ("interview_date", "March 12")}
BEFORE = {("prefers", "window seats on long flights"), ("has_manager", "Priya"), ("interview_date", "March 10")}


def maya_turns() -> list[ConversationTurn]:
    turns: list[ConversationTurn] = []
    for session, (day, said) in enumerate(SESSIONS):
        for index, (role, text) in enumerate(said):
            turns.append({
                "turn_id": f"maya-{session}-{index}", "user_id": "maya", "agent_id": "assistant", "flow_id": None,
                "session_id": f"maya-session-{session}", "turn_index": index, "role": role,  # type: ignore[typeddict-item]
                "content": text, "event_time_ms": T0 + day * DAY + index * 60_000, "layer": "USER",
                "causal_parent_ids": [], "tool_calls": [], "metadata": {},
            })  # fmt: skip
    return turns


def noah_turns() -> list[ConversationTurn]:
    """Another user, who mistypes his kitten's name and puts it right in a later session."""
    said = [(0, "We adopted a kitten named Biscuit!"), (2, "oops, Biscotti not Biscuit, autocorrect")]
    return [
        {
            "turn_id": f"noah-{session}", "user_id": "noah", "agent_id": "assistant", "flow_id": None,
            "session_id": f"noah-session-{session}", "turn_index": 0, "role": "user", "content": text,
            "event_time_ms": T0 + day * DAY, "layer": "USER", "causal_parent_ids": [], "tool_calls": [], "metadata": {},
        }
        for session, (day, text) in enumerate(said)
    ]  # fmt: skip


def ask(config: EngramConfig, n: int, query: str) -> CompiledContext:
    return ask_worker(config, f"maya-update-{n}", "maya", query, token_budget=1500, layers=["USER"],
                      agent_id="assistant", event_time_ms=T0 + 7 * DAY)  # fmt: skip


def score_of(compiled: CompiledContext, words: str) -> float:
    """The best score of a turn item saying ``words``; -1 when no item says them."""
    scores = [i["score"] for i in compiled["items"] if i["kind"] != "facts" and words.lower() in i["text"].lower()]
    return max(scores, default=-1.0)


def test_the_latest_word_wins_in_the_facts_block_the_api_and_the_ranking(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns = maya_turns() + noah_turns()
    publish_turns(config, turns)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        raw = wait_ingested(worker, config, len(turns))
        contexts = [ask(config, n, question) for n, (question, _, _) in enumerate(QUESTIONS)]
        status, listing = get(config, "/facts?user=maya", None)
        _, noahs = get(config, "/facts?user=noah", None)

    # Noah's own earlier word put right in a later session: the kitten is renamed, with the rule.
    pets = {f["value"] for f in noahs["facts"] if f["relation"] == "has_pet"}
    assert pets == {"kitten named Biscotti"}, noahs
    [renamed] = [d for d in decided(raw["noah"]) if d["rule"] == "correct-a-value"]
    assert (renamed["decision"], renamed["value"]) == ("retract", "kitten named Biscuit") and renamed["reason"]

    decisions: list[FactDecided] = decided(raw["maya"])
    active = {(f["relation"], f["value"]) for f in listing["facts"]}
    assert status == 200
    assert active >= NOW and not active & BEFORE, active
    for before in BEFORE:
        [gone] = [d for d in decisions if d["decision"] == "retract" and (d["relation"], d["value"]) == before]
        assert gone["rule"] in {"replace-single-valued", "retract-negated-fact"} and gone["reason"], gone

    for compiled, (question, old, new) in zip(contexts, QUESTIONS, strict=True):
        [block] = [i for i in compiled["items"] if i["kind"] == "facts"]
        for relation, value in NOW:
            assert f"{relation} {value}" in block["text"], block["text"]
        for _, value in BEFORE:
            assert value not in block["text"], (value, block["text"])
        assert score_of(compiled, new) > score_of(compiled, old), (question, compiled["items"])
