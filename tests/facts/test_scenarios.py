"""The scenario fixtures (fixtures/scenarios.json) through the real CLIPS rule engine."""

from __future__ import annotations

from typing import Any

import pytest

from engram.processors.facts.extractor import PatternExtractor
from engram.processors.facts.read import facts_block
from engram.processors.facts.reconciler import CALLBACK, FactReconciler
from engram.processors.facts.temporal import believed_at, valid_at
from tests.facts.scenarios import ScenarioRun, at, check_decision, load_scenarios

SCENARIOS = load_scenarios()


@pytest.fixture(scope="module")
def reconciler() -> FactReconciler:
    return FactReconciler()


@pytest.fixture(scope="module")
def callback() -> FactReconciler:
    return FactReconciler(CALLBACK)


def test_there_are_at_least_sixty_scenarios() -> None:
    assert len(SCENARIOS) >= 60
    assert len({s["name"] for s in SCENARIOS}) == len(SCENARIOS)


def run_scenario(scenario: dict[str, Any], reconciler: FactReconciler) -> None:
    run = ScenarioRun(reconciler, PatternExtractor())
    for index, step in enumerate(scenario["steps"]):
        where = f"{scenario['name']} step {index} ({step['op']})"
        user = step.get("user", "u1")
        if step["op"] in ("believed", "valid"):
            query = believed_at if step["op"] == "believed" else valid_at
            found = query(run.decisions(), user, at(step["t"]))
            assert sorted((d["relation"], d["value"]) for d in found) == sorted(map(tuple, step["facts"])), where
            if "horizons" in step:
                assert [d["horizon"] for d in found] == step["horizons"], where
            continue
        if step["op"] == "block":
            text, _ = facts_block(run.state(user), user)
            assert text.splitlines()[1:] == step["lines"], where
            continue
        if step["op"] == "distinct_ids":
            ids = {
                f.fact_id
                for u in step["users"]
                for f in run.state(u).facts.values()
                if (f.relation, f.value) == (step["relation"], step["value"])
            }
            assert len(ids) == len(step["users"]), where
            continue
        events = run.step(index, step)
        got = [e["change"][1] for e in events]
        assert len(got) == len(step["expect"]), f"{where}: got {[(g.get('decision'), g.get('rule')) for g in got]}"
        for g, want in zip(run.decisions()[len(run.decisions()) - len(got) :], step["expect"], strict=True):
            check_decision(g, want, run, where)
    assert reconciler.engine.working_memory_size() == 0, "the rules leave no facts behind"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenario(scenario: dict[str, Any], reconciler: FactReconciler) -> None:
    run_scenario(scenario, reconciler)


@pytest.mark.parametrize("scenario", SCENARIOS[::4], ids=[s["name"] for s in SCENARIOS[::4]])
def test_scenario_with_callback_similarity(scenario: dict[str, Any], callback: FactReconciler) -> None:
    run_scenario(scenario, callback)
