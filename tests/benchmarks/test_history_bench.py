"""`engram bench history` measures the dream step by tenth of a long history, deterministically."""

from __future__ import annotations

import json

import pytest

from engram.streams.cli import main as cli_main


def bench(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    assert cli_main(["bench", "history", "--turns", "1200", "--users", "2", *args, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_bench_history_prints_the_dream_steps_cpu_by_tenth_and_the_same_digest_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = bench(capsys)
    per_tenth = first["cpu_ms_per_turn_by_tenth"]
    assert isinstance(per_tenth, list) and len(per_tenth) == 10 and all(ms > 0 for ms in per_tenth)
    assert isinstance(first["late_vs_early"], float) and first["late_vs_early"] > 0
    assert isinstance(first["dream_events"], int) and first["dream_events"] > 0
    assert isinstance(first["dream_share"], float) and 0 < first["dream_share"] <= 1
    assert (first["turns_per_user"], first["user_gap_ms"]) == (600, 50_000)
    again = bench(capsys)
    assert (again["digest"], again["dream_events"]) == (first["digest"], first["dream_events"])
    other = bench(capsys, "--user-gap-ms", "3600000")  # an hour between turns: other dreams
    assert other["digest"] != first["digest"]


def test_bench_history_refuses_fewer_turns_than_tenths_per_user(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="at least 10 per user"):
        cli_main(["bench", "history", "--turns", "15", "--users", "2", "--json"])
