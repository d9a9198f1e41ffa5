"""The extractor against LoCoMo's own observation annotations (written by the dataset's authors).

Each LoCoMo session lists, per speaker, observations with the turn that evidences each
(``session_N_observation``: ``{speaker: [[text, "D1:3"], ...]}``). Every turn is read as its
speaker speaking for themselves (role ``user``, one user id per speaker, the session's time), so
the measure is the extractor's, not the bench's mapping of speaker_b to an assistant.

- ``observation_coverage``: the share of observations for which a fact from one of its evidence
  turns has a value sharing a content word with the observation;
- ``supported_share``: the share of facts whose value shares a content word with an observation
  of that speaker in that session;
- ``instruction_share``: the share of facts that are ``instruction``;
- ``facts_per_100_turns`` beside ``observations_per_100_turns``: coverage must come from right
  facts, not from more of them.

Content words are lowercased alphabetic words of three letters or more, less a stop list and the
speakers' names (every observation names its speaker).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from engram.benchmarks.locomo_reader import evidence_ids, flat_conversations, session_numbers, session_time_ms
from engram.processors.facts import lexicon as lx
from engram.processors.facts.extractor import Extractor, Utterance
from engram.processors.facts.model import CandidateFact
from engram.processors.facts.patterns import NEGATION_RELATIONS

_WORD: Final = re.compile(r"[a-z]{3,}")
STOP: Final = lx.words(
    "the and but for with that this these those from into onto over under about after before again also "
    "are was were been being have has had having does did doing done its it's she her hers him his they "
    "them their theirs you your yours our ours who whom whose which what when where why how not nor too "
    "very can will would could should may might must shall just than then there here some any all each "
    "every both few more most other such only own same out off one two got get gets getting really much "
    "many lot lots now still even ever yet well like thing things way ways feel feels felt make makes "
    "made new good great"
)


def content_words(text: str, names: frozenset[str] = frozenset()) -> frozenset[str]:
    """The words two texts must share to be about the same thing (see the module docstring)."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOP and w not in names)


@dataclass(frozen=True, slots=True)
class Observation:
    speaker: str
    session: int
    text: str
    evidence: tuple[str, ...]


@dataclass
class Tally:
    turns: int = 0
    observations: int = 0
    covered: int = 0
    facts: int = 0
    supported: int = 0
    instructions: int = 0
    evidence_turns: int = 0
    evidence_turns_with_facts: int = 0
    by_relation: dict[str, int] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        for name in ("turns", "observations", "covered", "facts", "supported", "instructions", "evidence_turns",
                     "evidence_turns_with_facts"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for relation, n in other.by_relation.items():
            self.by_relation[relation] = self.by_relation.get(relation, 0) + n

    def summary(self) -> dict[str, object]:
        return {
            "observation_coverage": _share(self.covered, self.observations),
            "supported_share": _share(self.supported, self.facts),
            "instruction_share": _share(self.instructions, self.facts),
            "facts_per_100_turns": round(100 * self.facts / self.turns, 1) if self.turns else 0.0,
            "observations_per_100_turns": round(100 * self.observations / self.turns, 1) if self.turns else 0.0,
            "evidence_turns_with_a_fact": _share(self.evidence_turns_with_facts, self.evidence_turns),
            "turns": self.turns,
            "observations": self.observations,
            "facts": self.facts,
        }


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def observations(data: Mapping[str, Any]) -> list[Observation]:
    out: list[Observation] = []
    for n in session_numbers(data):
        by_speaker = data.get(f"session_{n}_observation") or {}
        for speaker, items in by_speaker.items():
            for item in items:
                if isinstance(item, list) and len(item) >= 2:
                    out.append(Observation(str(speaker), n, str(item[0]), tuple(evidence_ids(item[1]))))
    return out


@dataclass(frozen=True, slots=True)
class TurnFacts:
    speaker: str
    session: int
    dia_id: str
    facts: tuple[CandidateFact, ...]


def extract_conversation(data: Mapping[str, Any], name: str, extractor: Extractor) -> list[TurnFacts]:
    """Every turn through the extractor, as its speaker (role user) at the session's time."""
    out: list[TurnFacts] = []
    for n in session_numbers(data):
        start_ms = session_time_ms(str(data[f"session_{n}_date_time"]))
        for index, raw in enumerate(data[f"session_{n}"]):
            speaker, dia_id = str(raw["speaker"]), str(raw["dia_id"])
            said = Utterance(str(raw.get("text", "")), "user", None, None, (f"{name}:{dia_id}",),
                             time_ms=start_ms + index * 1000)  # fmt: skip
            facts = tuple(f for f in extractor.extract([said]) if f.relation not in NEGATION_RELATIONS)
            out.append(TurnFacts(speaker, n, dia_id, facts))
    return out


def score_conversation(data: Mapping[str, Any], turns: Sequence[TurnFacts]) -> Tally:
    names = frozenset(w for key in ("speaker_a", "speaker_b") for w in _WORD.findall(str(data[key]).lower()))
    obs = observations(data)
    tally = Tally(turns=len(turns), observations=len(obs))
    by_turn = {t.dia_id: t for t in turns}
    said: dict[tuple[str, int], list[frozenset[str]]] = {}
    for o in obs:
        said.setdefault((o.speaker, o.session), []).append(content_words(o.text, names))
    for o in obs:
        words = content_words(o.text, names)
        facts = [f for d in o.evidence if (t := by_turn.get(d)) is not None for f in t.facts]
        if any(words & content_words(f.value, names) for f in facts):
            tally.covered += 1
    evidence = {d for o in obs for d in o.evidence}
    tally.evidence_turns = len(evidence & by_turn.keys())
    tally.evidence_turns_with_facts = sum(1 for d in evidence if d in by_turn and by_turn[d].facts)
    for t in turns:
        pool = said.get((t.speaker, t.session), [])
        for f in t.facts:
            tally.facts += 1
            tally.by_relation[f.relation] = tally.by_relation.get(f.relation, 0) + 1
            tally.instructions += f.relation == "instruction"
            value = content_words(f.value, names)
            tally.supported += any(value & words for words in pool)
    return tally


def conversations(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.json")):
        out.extend(flat_conversations(json.loads(path.read_text(encoding="utf-8")), path.stem))
    return out


def measure(folder: Path, extractor: Extractor, held_out: Iterable[str] = ()) -> dict[str, object]:
    """The figures of the module docstring over every conversation in ``folder``, and per
    conversation; ``held_out`` names conversations also reported together as ``held_out``."""
    held = set(held_out)
    total, kept, developed = Tally(), Tally(), Tally()
    per: dict[str, object] = {}
    for name, data in conversations(folder):
        tally = score_conversation(data, extract_conversation(data, name, extractor))
        total.add(tally)
        (kept if name in held else developed).add(tally)
        per[name] = tally.summary()
    result = total.summary()
    result["by_relation"] = dict(sorted(total.by_relation.items(), key=lambda kv: -kv[1]))
    result["conversations"] = per
    if held:
        result["held_out"] = {"names": sorted(held), **kept.summary()}
        result["developed"] = developed.summary()
    return result
