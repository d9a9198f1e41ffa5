"""The extractor's prefilter (processors/facts/prefilter.py): the literals it requires are ones no
match can do without, so skipping a pattern for a clause without them loses nothing; the
extractor finds the very facts it found without the prefilter, on every LoCoMo utterance."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.benchmarks.locomo_data import locomo_turn_texts
from engram.processors.facts.extractor import PatternExtractor, Utterance
from engram.processors.facts.patterns import ALL_PATTERNS, Pattern
from engram.processors.facts.prefilter import Prefilter, admits, compiled, folded, needs

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "benchdata" / "locomo"


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"(?i:\bi)\s+(?i:lost|quit)\s+(?i:my|the)\s+(?i:job)\b", {"lost", "quit"}),  # the longest shortest
        (r"\bmy\s+(?:dog|cat)?\s*(?P<v>\w+)", {"my"}),  # an optional part requires nothing
        (r"(?:ab)+cd", {"ab"}),  # a repeat taken at least once requires its body; ties: first found
        (r"(?:xy)*cd", {"cd"}),
        (r"(?:born|raised)\s+in|moved\s+to", {"born", "raised", "moved"}),  # each branch's best, together
        (r"(?:born|raised)\s+in|\w+ed\s+to", {"born", "raised", "ed"}),
        (r"(?:born|raised)\s+in|\w+\s+\d+", frozenset()),  # a branch requiring nothing: the alternation neither
        (r"I\s+(?=teach)\w+", frozenset()),  # a look-ahead adds nothing; "I" alone is too short
        (r"[Ww]e\s+live", {"live"}),
        (r"\w+\s+\d+", frozenset()),  # nothing literal at all
        (r"caf\u00e9\s+owner", {"owner"}),  # a literal outside ASCII is no test; others still are
        (r"(?i:Stra\u00dfe)", frozenset()),
    ],
)
def test_needs_reads_the_literals_every_match_contains(regex: str, expected: set[str]) -> None:
    assert needs(re.compile(regex)) == frozenset(expected)


def test_a_clause_outside_ascii_is_not_filtered_and_case_does_not_matter() -> None:
    need = compiled(needs(re.compile(r"(?i:\bi)\s+(?i:quit)\b")))
    assert admits(need, folded("Yesterday I QUIT, finally"))
    assert not admits(need, folded("Yesterday I stayed"))
    assert folded("I qu\u0131t") is None and admits(need, folded("I qu\u0131t"))  # a dotless i: the regex may match
    assert re.search(r"(?i:quit)", "qu\u0131t") is not None


@pytest.mark.parametrize("pattern", ALL_PATTERNS, ids=[p.name for p in ALL_PATTERNS])
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_text_a_pattern_matches_passes_its_prefilter(pattern: Pattern, data: st.DataObject) -> None:
    text = data.draw(st.from_regex(pattern.regex))
    if pattern.regex.search(text):
        assert admits(compiled(needs(pattern.regex)), folded(text)), text


class _Unfiltered(PatternExtractor):
    """Every pattern tried on every clause, as before the prefilter."""

    def __init__(self) -> None:
        super().__init__()
        self._prefilter = Prefilter([frozenset() for _ in self.patterns])


def test_the_extractor_finds_on_locomo_what_it_found_trying_every_pattern() -> None:
    texts = locomo_turn_texts(LOCOMO)
    utterances = [Utterance(t, role=role) for t in texts for role in ("user", "assistant")]
    filtered, unfiltered = PatternExtractor().extract(utterances), _Unfiltered().extract(utterances)
    assert len(texts) > 1000 and len(filtered) > 100, f"{len(texts)} LoCoMo turns under {LOCOMO}"
    assert filtered == unfiltered
