"""The client passes each request's answer on once, however often Kafka delivers it."""

from __future__ import annotations

from engram_client.client import FirstAnswers


def test_a_redelivered_answer_is_not_new() -> None:
    answers = FirstAnswers()
    assert [answers.first(r) for r in ("a", "b", "a", "c", "b")] == [True, True, False, True, False]


def test_only_the_last_size_ids_are_remembered() -> None:
    answers = FirstAnswers(size=2)
    assert [answers.first(r) for r in ("a", "b", "c", "a", "c")] == [True, True, True, True, False]
