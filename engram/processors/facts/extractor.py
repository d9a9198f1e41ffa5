"""Extraction: turns in, candidate triples out.

``Extractor`` is the protocol (the pattern extractor here, the optional LLM one in llm.py).
``PatternExtractor`` is the deterministic, offline default: sentence split, skip questions and
hypotheticals, normalize (contractions, adverbs between subject and verb, a dropped leading
"I"), split into clauses at conjunctions carrying the subject over ("I work at X and live in
Y"), then the pattern table of patterns.py over each first-person clause. A clause that opens on
someone else ("my boss moved to Berlin", "she got a job at Zara") gives that person's facts
(``user.manager``), or none when only a pronoun says who: never the speaker's (subjects.py says
whom a clause is about).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from engram.processors.facts import corrections
from engram.processors.facts import lexicon as lx
from engram.processors.facts.model import CandidateFact, Scope
from engram.processors.facts.patterns import (
    ALL_PATTERNS,
    INSTRUCTION,
    INSTRUCTION_TOPIC,
    KIN,
    PLEASANTRY,
    RELATIONSHIPS,
    STANDING,
    Emit,
    Pattern,
)
from engram.processors.facts.prefilter import Prefilter, folded, needs
from engram.processors.facts.speech import Clause, inner_clauses, read_clause, restore_subject
from engram.processors.facts.subjects import (
    NAMED,
    SPEAKER,
    SPEAKER_ONLY,
    about,
    first_person,
    kin_role,
    named_subject,
    possessed,
    reported,
    third_party,
)
from engram.processors.facts.values import DANGLING, MAX_WORDS, PRONOUNS, pronoun_object, trimmed, whole
from engram.processors.facts.when import resolve
from engram.schemas.records import ConversationTurn, NodeUpserted


@dataclass(frozen=True, slots=True)
class Utterance:
    """What an extractor reads: one message, who said it, and where it came from."""

    text: str
    role: str = "user"
    agent_id: str | None = None
    flow_id: str | None = None
    source_event_ids: tuple[str, ...] = ()
    time_ms: int | None = None  # when it was said (epoch ms): relative times ("last Friday") resolve against it

    @staticmethod
    def from_turn(turn: ConversationTurn) -> Utterance:
        return Utterance(
            turn["content"], turn["role"], turn["agent_id"], turn["flow_id"], (turn["turn_id"],), turn["event_time_ms"]
        )

    @staticmethod
    def from_event_node(node: NodeUpserted) -> Utterance | None:
        """The turn behind a Trace event node (its text, and the role and turn id the Trace records
        in its properties); None for an event node that does not say who spoke."""
        props = node["properties"]
        if "role" not in props:
            return None
        turn_id = props.get("turn_id", node["node_id"])
        return Utterance(
            node["text"], props["role"], node["agent_id"], node["flow_id"], (turn_id,), node["event_time_ms"]
        )


class Extractor(Protocol):
    """Produces candidate facts from utterances. Never raises on bad input: no facts instead."""

    name: str

    def extract(self, utterances: Sequence[Utterance]) -> list[CandidateFact]: ...


@dataclass(frozen=True, slots=True)
class SpeechPolicy:
    """How much of ordinary speech (speech.py) becomes facts: at most ``per_utterance`` facts an
    utterance (pattern facts count first), each clause of ``weight`` at least ``min_weight``;
    ``per_utterance=0`` hears the patterns only."""

    per_utterance: int = 3
    min_weight: float = 1.0
    confidence: float = 0.6


_SENTENCE = re.compile(
    r"\s+[-\u2013\u2014]\s+|(?<!\b[A-Z]\.)(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)(?<=[.!?])\s+|\n+"
)
_RHETORICAL = re.compile(r"^(?i:did\s+i\s+(?:mention|tell\s+you)|did\s+you\s+know)(?:\s+(?i:that))?\s+")
_HYPOTHETICAL_START = re.compile(r"^(?i:if|what\s+if|should\s+i|would|could|maybe|suppose|imagine)\b")
_HYPOTHETICAL = re.compile(
    r"(?i:\bi\s+wonder|thinking\s+(?:about|of)|not\s+sure|considering|would\s+you|i\s+guess|in\s+case|hypothetically"
    r"|\bi\s+would\s+(?:enjoy|love|like\s+(?!to\b)|be)|\bi\s+might|\bsomeday|\bone\s+day"
    r"|\bi\s+(?:dreamt|dreamed|imagined|pretended)"
    # what almost happened did not: "I almost adopted a cat", "we nearly bought a house"
    r"|\b(?:almost|nearly)\s+(?:[a-z]+ed|got|bought|went|had|quit|took|left|made|gave|lost|broke|fell|ran|won|moved"
    r"|signed|joined|cried|died))\b"
)
_SOMEDAY = re.compile(r"(?i:someday|one\s+day)$")
_WISH = re.compile(r"\b(?i:(?:i|we)\s+(?:really\s+)?(?:want|hope|wish|plan|dream\s+of|aim)\s+to)\b")
_REQUEST = re.compile(r"^(?i:(?:can|could|would|will)\s+you\s+(?:please\s+)?)(?=(?i:remind\s+me|remember|note)\b)")
_ADVERB_AFTER = re.compile(
    r"(?i)\b(i|we|am|are|is|was|were|have|has|had|would|will|should|can|do|does|did|don't|do\s+not)"
    rf"(?:\s+(?:{lx.alternation(lx.ADVERBS)}))+(?=\s+[a-z])"
)
_DROPPED_SUBJECT = re.compile(
    # a copula means the opening word is a title or noun ("Lost in Translation is great"), not a verb
    rf"^(?:(?i:just|recently|finally)\s+)?(?=(?i:{lx.alternation(lx.DROPPED_SUBJECT_VERBS)})\b)"
    r"(?!.*\b(?i:is|are|was|were)\b)"
)
_CLAUSE_BREAK = re.compile(r"\s*;\s*|,?\s+(?i:and|but|plus|whereas|while)\s+|,\s+")
_EMBEDDED = re.compile(
    r"\b(?i:that|which|who|whom|whose|where|because|if|when|whether)\b"
    # a clause with a subject of its own after "I'm sure", "I bet": "I'm sure people will ... and love it"
    r"|\b(?i:sure|think|bet|hope|guess|know|believe|reckon|mean)\s+(?!(?i:i|we)\b)[a-z]+\s+"
    r"(?i:will|would|can|could|should|might|are|were|is|was|have|has)\b"
)
_CLAUSE_SUBJECT = re.compile(
    r"^(?i:(?:now|then|also|currently|still|actually|yesterday|today|tonight|recently|lately|(?:last|this|next)\s+\w+"
    r"|\w+\s+\w+\s+ago),?\s+)?(?i:(?:i|we|my|our)\b(?!\s+(?:and|or)\b)|i'm|i've|we're)"
)
_CARRY_VERB = re.compile(rf"^(?i:{lx.alternation(lx.CARRY_VERBS)})\b")
_CARRY_GERUND = re.compile(r"^(?i:starting|working|living|moving|studying|teaching|joining|heading|flying)\s+(?=[a-z])")
"""A participle after a comma that goes on with the speaker's own news ("handed my notice in, starting
at Beacon Hospice on Monday")."""
_BARE_SUBJECT = re.compile(r"^(?i:me|i|we|my\s+\w+|our\s+\w+|\w+)$")
_LEFT_SUBJECT = re.compile(r"^(?i:(?:\w+\s+){0,2}?(?P<s>i|we)\b)")
_TRAILING = re.compile(
    r"\s+(?i:every|each|last|next|right\s+now|now|today|tonight|anymore|any\s+more|pretty\s+well"
    # "this week", not "this dairy-free chocolate cake"
    r"|(?:this|these)\s+(?:days?|weeks?|weekend|month|year|morning|afternoon|evening|night|time|summer|winter"
    r"|spring|fall|autumn|semester|season|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|really\s+well"
    r"|very\s+well|well|a\s+lot|honestly|btw|lately|for\s+(?:\w+\s+)?(?:years?|months?|weeks?|days?)|at\s+home"
    r"|in\s+a\s+band"
    r"|for\s+everything|for\s+work|for\s+a\s+\w+|with\s+my\s+\w+|to\s+be\s+honest|though|too|at\s+all|yesterday"
    r"|earlier|recently|ago|on\s+(?:weekends|the\s+weekends?|\w+days)|in\s+my\s+(?:free|spare)\s+time"
    r"|(?:a|an|one|two|three|four|five|six|several|a\s+few|\d+)\s+(?:years?|months?|weeks?|days?)\s+ago"
    r"|tbh|ngl|lol|lmao|haha|rn|af|imo|finally|literally|most\s+days|twice|once\s+a|all\s+(?:week|day|year)"
    r"|as\s+well|again)\b.*$"
)
_INSTEAD: Final = re.compile(r"\s+(?i:instead\s+of)\s+")
_GIVEN_UP: Final = {"likes": "no_longer_likes", "uses": "no_longer_uses"}
"""What a liking or a tool says was given up when it came "instead of" another ("into cycling instead of
running now": likes cycling, no longer running)."""
_FILLER_TAIL = re.compile(r"(?:\s+(?i:actually|lol|lmao|haha+|btw|tbh|ngl|honestly|fwiw|i\s+guess|i\s+think))+$")
"""Words said after a value, also where the rest of a value is kept: "interview with Stripe on thursday actually"."""
_SYMBOLS = re.compile(r"[^\w\s'+#.,&/-]+")  # emoji and decoration: never part of a value
_LIST_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s*/\s*)\s*")
_KEEP_TAIL: Final = frozenset(
    {"needs_to", "plans_to", "wants_to", "has_appointment", "has_event", "has_trip", "deadline_is", "working_on"}
)
_EMPTY_OK: Final = frozenset({"divorced", "broke_up_with", "no_longer_works_at", "no_longer_status", "no_longer_in"})
_OPINIONS: Final = frozenset({"likes", "dislikes", "prefers", "no_longer_likes"})
_DEICTIC = re.compile(
    r"^(?i:it|that|this|those|these|them|him|her|you|one)(?:\s+\w+)?$"
    r"|^(?i:the|your|that|this)\s+(?i:idea|ideas|suggestions?|tips?|list|plan|recipes?|options?|approach)\b"
    # an appraisal of what the listener showed ("I love how it shows ..."), not a liking of the speaker's
    r"|^(?i:how|that|what|when|the\s+way)\b"
)
_ONLY_WHEN = re.compile(
    r"^(?i:every\s+(?:day|week|morning|night|minute|second|time)|all\s+the\s+time|so\s+much|a\s+lot)$"
)  # a liking's "value" that only says how often or how much ("a job I enjoy every day")
_SHOWN = re.compile(
    r"\b(?i:looks?\s+(?:so\s+|really\s+|super\s+)?(?:great|amazing|awesome|beautiful|cool|nice|good|delicious|lovely"
    r"|stunning|fantastic|incredible|gorgeous|tasty)|(?:this|that|the|your)\s+(?:picture|photo|pic|painting|drawing|shot))\b"
)
"""A reply to something the other person showed: a liking of "the X" in it is an appraisal of the picture."""
_YOURS = re.compile(r"\b(?i:your|yours)\b")  # "I love your ice cream": a liking of the listener's thing
_TASKS: Final = frozenset({"needs_to", "plans_to", "wants_to"})
_PHRASES: Final = _TASKS | {"can", "working_on", "is_learning"}  # verb phrases whose object may be a pronoun
_BARE_TRANSITIVE = re.compile(r"^(?i:visit|see|try|do|get|buy|make|read|watch|use|find|check\s+out)$")
"""A wish or plan of one verb that needs an object the sentence gives elsewhere ("places I want to visit")."""
_RESOLVE = re.compile(
    # resolve and leave-taking said as a task ("gotta go", "I should give it a go", "gotta stay focused")
    r"^(?i:go|leave|run|sleep)$|^(?i:stay|keep|be|believe|hang|never|give\s+it|do\s+(?:it|that|this|so|the\s+same)|try\s+it)\b"
)
_LANG_QUALIFIER = re.compile(r"^(?i:(?:a\s+)?(?:little|bit)(?:\s+of)?|some|basic|fluent|conversational|native)\s+")
_ENTITY_TAIL = re.compile(
    r"^([A-Z][\w+#.-]*(?:\s+[A-Z][\w+#.-]*)*)\s+(?:on|at|for|with|via|through|using|from"
    r"|by)\s+.*$"
)
_PRONOUN_START = re.compile(r"^(?i:(?:i|we|my|our|me)\b)")
# A pet the speaker mentions in passing ("walking my labrador keeps me sane") has a pet fact of its
# own when no pattern named it more fully in the sentence.
_PET_MENTION = re.compile(
    rf"(?i:\b(?:my|our))\s+(?P<v>(?i:{lx.alternation(lx.PETS)}))\b(?!-)"
    # a compound noun is a thing, not the animal: "my horse painting", "our dog bed"
    r"(?!\s+(?i:painting|drawing|picture|photo|print|poster|toys?|food|bed|walker|sitter|trainer|groomer|treats?"
    r"|figurine|mug|shirt|tattoo|costume|sweater|collar|leash|video|book|art|sculpture|bowl|hair|fur)\b)"
)


_CONTRACTION = re.compile(r"\b([Ii]|[Ww]e)'(m|ve|d|ll|re)\b")
_EXPANDED: Final = {"m": "am", "ve": "have", "d": "would", "ll": "will", "re": "are"}
_EMOJI = re.compile("[\U0001f000-\U0001ffff\u2600-\u27bf\ufe0f\u200d]+")


def _expand(match: re.Match[str]) -> str:
    subject, short = match.group(1), match.group(2)
    if (subject in ("I", "i")) == (short == "re") or (subject not in ("I", "i") and short in ("m", "d")):
        return match.group()  # "I're", "we'm", "we'd" are left as they are
    return f"{subject} {_EXPANDED[short]}"


_UNMARKED: Final = re.compile(
    r"\b(?:(?P<im>[Ii]m)|(?P<ive>[Ii]ve)|(?P<nt>dont|didnt|doesnt|wont|havent|hasnt|isnt|wasnt))\b"
)
"""Contractions typed without the apostrophe ("im moving", "ive been", "dont like"): unambiguous words
only ("id", "cant", "well" are words of their own)."""


def _marked(match: re.Match[str]) -> str:
    if match.group("im"):
        return f"{match.group('im')[0]}'m"
    if match.group("ive"):
        return f"{match.group('ive')[0]}'ve"
    word = match.group("nt")
    return f"{word[:-1]}'t"


def _expand_contractions(text: str) -> str:
    text = _EMOJI.sub("", text.replace("\u2019", "'")).strip()
    return _CONTRACTION.sub(_expand, _UNMARKED.sub(_marked, text))


def _clean(value: str, relation: str) -> str:
    text = _FILLER_TAIL.sub("", _SYMBOLS.sub("", value).strip().strip(" ,;:!?\"'"))
    if relation not in _KEEP_TAIL:
        text = _TRAILING.sub("", text)
    text = re.sub(r"^(?i:an?\s+)", "", text)
    text = re.sub(r"^(?i:the\s+)(?=[a-z])", "", text) if relation in {"prefers", "plays_instrument"} else text
    if relation == "speaks_language":
        text = _LANG_QUALIFIER.sub("", text)
    if relation not in _KEEP_TAIL:
        text = _ENTITY_TAIL.sub(r"\1", text)
    if relation == "has_pet":  # one way to say a pet's name, so that "a dog called Rex" and "named Rex" are one fact
        text = re.sub(r"\s+(?i:called)\s+(?=\S)", " named ", text)
    if relation in {"completed", "sold", "stopped", "lost"}:
        text = re.sub(r"^(?i:my|our)\s+(?=\S)", "", text)  # "finished my PhD": the PhD
    if relation in {"owns", "drives"}:
        text = re.sub(r"^(?i:brand[\s-]+new|new)\s+(?=\S)", "", text)
    if relation in _OPINIONS and (_DEICTIC.match(text) or _YOURS.search(text)):
        return ""
    if relation in _OPINIONS and _ONLY_WHEN.match(text):
        return ""  # "a job I enjoy every day": how often, not what
    if relation in _TASKS and (_RESOLVE.match(text) or _BARE_TRANSITIVE.match(text)):
        return ""
    text = DANGLING.sub("", text)
    if relation in _PHRASES and pronoun_object(text) or text.lower() in PRONOUNS:
        return ""
    if (relation in _KEEP_TAIL or relation in _OPINIONS) and len(text.split()) > MAX_WORDS:
        text = trimmed(text)
    if (relation in _PHRASES or relation in _OPINIONS) and not whole(text):
        return ""
    return text.rstrip(". ").strip()


_KIN_ROLES: Final = frozenset(f"user.{role}" for role in (*lx.KIN.values(), *lx.KIN_PLURALS.values()))
"""The relatives whose own facts a clause about them gives (``_theirs``); of other people the speaker
names (lexicon.OTHERS: "my neighbor plays the trumpet") only what a pattern reads, never as the speaker's."""
_YOUNG: Final = frozenset({"puppy", "kitten", "pup", "puppies", "kittens"})


def _named_pets_first(found: list[tuple[str, str, str, float]]) -> list[tuple[str, str, str, float]]:
    """An utterance that names a pet says who the young animal it mentions is: "we got a puppy! a
    beagle called Ziggy" is one pet, the beagle named Ziggy, not also a puppy."""
    named = any(r == "has_pet" and " named " in v for _, r, v, _ in found)
    if not named:
        return found
    return [f for f in found if not (f[1] == "has_pet" and f[2].lower() in _YOUNG)]


_PET_WORD = re.compile(rf"\b(?i:{lx.alternation(lx.PETS)})\b")


def _named_together(values: list[str]) -> list[str]:
    """A list of pets split back where it named them together: "two cats named Salt and Pepper" is
    one value, not "two cats named Salt" and a pet called "Pepper"."""
    out: list[str] = []
    for value in values:
        if out and _PET_WORD.search(value) is None and re.search(r"\s(?i:named|called)\s", out[-1]):
            out[-1] = f"{out[-1]} and {value}"
        else:
            out.append(value)
    return out


def _before_hypothetical(clause: str) -> str:
    """The part of a clause a hypothetical does not reach: "" when it opens on one ("I'm thinking
    about moving"); the phrases before the one holding it when it comes after a comma ("gave a
    talk at PyCon, still cringe thinking about it": the talk was given)."""
    marker = _HYPOTHETICAL.search(clause)
    if marker is None:
        return clause
    if _SOMEDAY.match(marker.group()) and _WISH.search(clause, 0, marker.start()):
        return clause[: marker.start()].rstrip()  # "I want to visit Iceland someday": a wish is told
    comma = clause.rfind(", ", 0, marker.start())
    return clause[:comma] if comma > 0 else ""


def _language_case(value: str) -> str:
    return value.capitalize() if value.islower() and value.lower() in lx.LANGUAGES else value


def split_clauses(sentence: str) -> list[str]:
    """Split a sentence into clauses at "and"/"but"/";"/"," where a new predicate starts.

    A break is taken when the right side opens with its own subject ("..., and I live in Y"),
    or, after a conjunction or ";", with a verb that shares the left side's subject, which is
    then carried over ("I work at X and live in Y" -> "I work at X" / "I live in Y"). Lists
    ("I speak French and Spanish") and compound subjects ("My wife and I live ...") stay whole.
    """
    clauses: list[str] = []
    subject = "I"
    start = 0
    carry = ""
    for brk in _CLAUSE_BREAK.finditer(sentence):
        left, right = sentence[start : brk.start()].strip(), sentence[brk.end() :]
        if not left or _BARE_SUBJECT.match(left):
            continue
        own = _LEFT_SUBJECT.match(carry + left)
        if own is not None:
            subject = own.group("s")
        if _CLAUSE_SUBJECT.match(right):
            prefix = ""
        elif brk.group().strip(" ,") and _CARRY_VERB.match(right) and own is not None and not _EMBEDDED.search(left):
            prefix = subject + " "
        elif _CARRY_GERUND.match(right) and own is not None and not _EMBEDDED.search(left):
            prefix = subject + (" am " if subject.lower() == "i" else " are ")  # "..., starting at X on Monday"
        else:
            continue
        clauses.append(carry + left)
        carry, start = prefix, brk.end()
    clauses.append(carry + sentence[start:].strip())
    return clauses


class PatternExtractor:
    """Regex patterns over first-person statements; deterministic and offline."""

    name = "patterns-v3"

    def __init__(self, patterns: Sequence[Pattern] = ALL_PATTERNS, speech: SpeechPolicy | None = None) -> None:
        self.patterns = tuple(patterns)
        self.speech = speech or SpeechPolicy()
        self._prefilter = Prefilter([needs(pattern.regex) for pattern in self.patterns])  # facts/prefilter.py
        # Patterns that name the relative they are about ("my sister ... lives in", "my grandma passed away").
        self._relatives = frozenset(
            i for i, p in enumerate(self.patterns) if p in RELATIONSHIPS or KIN in p.regex.pattern
        )

    def extract(self, utterances: Sequence[Utterance]) -> list[CandidateFact]:
        out: list[CandidateFact] = []
        for utt in utterances:
            out.extend(self.extract_one(utt))
        return out

    def extract_one(self, utt: Utterance) -> list[CandidateFact]:
        if utt.role not in ("user", "assistant"):
            return []
        agent = utt.role == "assistant"
        scope: Scope = "agent" if agent else "user"
        scope_id = (utt.agent_id or "") if agent else ""
        found: list[tuple[str, str, str, float]] = []
        heard: list[Clause] = []
        for sentence in _SENTENCE.split(utt.text.strip()):
            facts_said, clauses = self._sentence(sentence.strip(), agent)
            found.extend(facts_said)
            heard.extend(clauses)
        if _SHOWN.search(utt.text):  # "Wow, looks great! I love the dark sky": the picture's, not a taste
            found = [f for f in found if not (f[1] in _OPINIONS and f[2][:4].lower() == "the ")]
        seen: set[tuple[str, str, str]] = set()
        facts: list[CandidateFact] = []
        for subject, relation, value, conf in _named_pets_first(found):
            key = (subject, relation, value.casefold())
            if key in seen:
                continue
            seen.add(key)
            facts.append(CandidateFact(subject, relation, value, conf, scope, scope_id, utt.source_event_ids))
        fix = None if agent else corrections.said(utt.text)
        if fix is not None:  # "oops, his name's Jack not Jake": which fact, the reconciler finds
            facts.append(CandidateFact("user", corrections.CORRECTED, fix[0], 0.9, scope, scope_id,
                                       utt.source_event_ids, corrects=fix[1]))  # fmt: skip
        for clause in self._heard(heard, facts):
            when = resolve(clause.when, utt.time_ms) if clause.when and utt.time_ms is not None else None
            facts.append(CandidateFact(clause.subject, clause.relation, clause.value, self.speech.confidence, scope,
                                       scope_id, utt.source_event_ids, when))  # fmt: skip
        return facts

    def _heard(self, heard: list[Clause], facts: list[CandidateFact]) -> list[Clause]:
        """The clauses of ordinary speech worth a fact: those that say the most, while the
        utterance's pattern facts leave room (``SpeechPolicy``)."""
        room = self.speech.per_utterance - len(facts)
        kept = sorted((c for c in heard if c.weight >= self.speech.min_weight), key=lambda c: -c.weight)[: max(room, 0)]
        return [c for c in heard if c in kept]

    def _sentence(self, sentence: str, agent: bool) -> tuple[list[tuple[str, str, str, float]], list[Clause]]:
        if not sentence:
            return [], []
        rhetorical = _RHETORICAL.match(sentence) is not None
        sentence = _expand_contractions(_RHETORICAL.sub("", sentence))
        if sentence.endswith("?") and not rhetorical:
            request = _REQUEST.sub("", sentence)
            if request == sentence:
                # "just moved to Hamburg, know any good bakeries?": the statement before the question stands
                sentence = sentence.rsplit(", ", 1)[0] if ", " in sentence else ""
                if not sentence:
                    return [], []
            else:
                sentence = request.rstrip("?")
        if _HYPOTHETICAL_START.match(sentence):
            return [], []
        sentence = restore_subject(_DROPPED_SUBJECT.sub("I ", _ADVERB_AFTER.sub(r"\1", sentence)))
        sentence = _ADVERB_AFTER.sub(r"\1", sentence)  # the restored "I am" may stand before one too
        found: list[tuple[str, str, str, float]] = []
        heard: list[Clause] = []
        for clause, inner in ((c, inner) for part, inner in inner_clauses(sentence) for c in split_clauses(part)):
            clause = _before_hypothetical(clause)
            if not clause:
                continue
            said = self._clause(clause, agent)
            found.extend(said)
            if not said and not agent and self.speech.per_utterance:
                generic = read_clause(clause)
                if generic is not None and (not inner or generic.relation in ("did", "is_doing")):
                    heard.append(generic)
        if not found and not heard and not agent and not _PRONOUN_START.match(sentence) \
                and not _HYPOTHETICAL.search(sentence):  # fmt: skip
            found.extend(self._instruction(sentence))
        if not agent and not any(f[1] == "has_pet" for f in found) and not _HYPOTHETICAL.search(sentence):
            named = " ".join(f[2].lower() for f in found)  # "my cat died": the pet a pattern spoke of
            found.extend(
                ("user", "has_pet", pet, 0.7)
                for m in _PET_MENTION.finditer(sentence)
                if not re.search(rf"\b{re.escape(pet := m.group('v').lower())}\b", named)
            )
        return found, heard

    def _clause(self, clause: str, agent: bool) -> list[tuple[str, str, str, float]]:
        taken: list[tuple[int, int]] = []
        found: list[tuple[str, str, str, float]] = []
        admitted = self._prefilter.admitted(folded(clause))
        other = None if agent else third_party(clause) or named_subject(clause)
        thing = None if agent or other is not None else possessed(clause)
        speaker = None if other is None else SPEAKER.search(clause, other[1])
        if other is not None and reported(clause, other[1]):
            return []  # "my friend thinks I should move": their view of the speaker, no fact the speaker stated
        for i, pattern in enumerate(self.patterns):
            if i not in admitted or (agent and not pattern.agent_ok):
                continue
            for match in pattern.regex.finditer(clause):
                span = match.span()
                if any(span[0] < end and start < span[1] for start, end in taken):
                    continue
                facts = [f for emit in pattern.emits for f in self._emit(emit, match, agent)]
                if other is not None and i not in self._relatives and (speaker is None or speaker.start() > span[1]):
                    facts = about(other[0], facts)  # no "I" or "we" before or in the match: the other's
                elif thing is not None and span[0] >= thing:
                    facts = [f for f in facts if f[0] != "user"]  # "my company moved to Austin": the company's move
                if facts:
                    taken.append(span)
                    found.extend(facts)
        if other is not None and (other[0] in _KIN_ROLES or other[0].startswith(NAMED)) and speaker is None:
            found.extend(self._theirs(other[0], clause[other[1] :], found, agent))
        return found

    def _theirs(
        self, role: str, rest: str, found: list[tuple[str, str, str, float]], agent: bool
    ) -> list[tuple[str, str, str, float]]:
        """What the patterns read in a clause about a relative said as the speaker's own ("my
        brother Sam is studying medicine in Prague" read as "I am studying medicine in Prague"),
        given to the relative: the table's first-person patterns, for anyone the speaker names."""
        said = first_person(rest)
        if said is None:
            return []
        known = {(relation, value.casefold()) for subject, relation, value, _ in found if subject == role}
        return [
            (role, relation, value, conf)
            for subject, relation, value, conf in self._clause(said, agent)
            if subject == "user" and relation not in SPEAKER_ONLY and (relation, value.casefold()) not in known
        ]

    @staticmethod
    def _emit(emit: Emit, match: re.Match[str], agent: bool) -> list[tuple[str, str, str, float]]:
        groups = {k: (v or "") for k, v in match.groupdict().items()}
        role = kin_role(groups.get("role", ""))
        kind = groups.get("k", "").lower()
        event = "_".join(groups.get("e", "").lower().split())
        relation = emit.relation.format(role=role, k=kind, e=event)
        nationality = lx.NATIONALITIES.get(groups.get("v", "").lower(), "")
        raw = emit.value.format(**{**groups, "nationality": nationality})
        subject = emit.subject.format(role=role)
        if agent:
            subject = subject.replace("user", "agent", 1)
        values = _LIST_SPLIT.split(raw) if emit.split_list else [raw]
        if relation == "has_pet":
            values = _named_together(values)
        out: list[tuple[str, str, str, float]] = []
        for value in values:
            instead = _INSTEAD.split(value, maxsplit=1) if relation in _GIVEN_UP else [value]
            cleaned = _clean(instead[0], relation)
            if cleaned or relation in _EMPTY_OK:
                # "I know some Mandarin": a language spoken, not a skill
                said = "speaks_language" if relation == "knows" and cleaned.casefold() in lx.SPOKEN else relation
                out.append((subject, said, _language_case(cleaned), emit.confidence))
            if len(instead) == 2 and (given_up := _clean(instead[1], relation)):  # "cycling instead of running"
                out.append((subject, _GIVEN_UP[relation], _language_case(given_up), emit.confidence))
        return out

    @staticmethod
    def _instruction(sentence: str) -> list[tuple[str, str, str, float]]:
        match = INSTRUCTION.match(sentence)
        if match is None or PLEASANTRY.match(match.group("v")):
            return []
        if not (INSTRUCTION_TOPIC.search(sentence) or STANDING.search(sentence)):
            return []
        value = match.group("v").split(", ", 1)[0].strip().rstrip(".!")
        return [("user", "instruction", value, 0.8)] if len(value.split()) >= 2 else []
