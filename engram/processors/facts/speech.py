"""Ordinary speech: what a first-person clause says the speaker did, does, is doing, plans or thinks.

The pattern table (patterns.py) knows the fixed relations (works_at, lives_in, has_pet...). Most
of what people tell each other is not one of those: a story ("twisted my knee playing soccer"),
an activity ("I've been experimenting with sourdough"), a habit ("we donate to a shelter"), a plan
("we're doing Japan in October"), an opinion ("I think remote work is overrated"). This module
reads such a clause by its shape, with no parser: the subject (I, we, my X), the auxiliaries, and
the verb form that follows them decide the relation; the verb phrase up to the clause's end is the
value.

- ``did``: a past verb ("went", "launched"), a perfect ("have been to Paris"), "used to"; one whose
  time is ahead is ``has_event`` ("got a job interview tomorrow") or ``plans_to``;
- ``is_doing``: a progressive ("am training for", "have been looking at"); "working on X" is
  ``working_on``, "loving / enjoying X" ``likes``;
- ``has_been``: "have been" and a state ("been busy volunteering at the shelter");
- ``feels``: "felt / feel" and a thing felt ("a strong connection to art");
- ``does``: a present verb of activity (not a verb of thinking or talking: "I guess", "I mean");
- ``plans_to``: "will", "going to", "planning to", "off to";
- ``thinks``: "I think / believe / reckon that ...", the proposition.

A clause is heard only when its value is whole (values.py): it names something (a content word
that is not a pronoun) and names it itself (no pronoun standing for something said elsewhere: "had
them for years", "named her Tilly"), says nothing of the listener (no "you": that is talk about
the other person, not a fact about the speaker), and is not a run-on (at most ``MAX_WORDS`` words
once trimmed at the clause's connectives). ``Clause.weight`` ranks the clauses of one utterance:
the extractor keeps the few that say the most.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from engram.processors.facts import lexicon as lx
from engram.processors.facts.values import DANGLING, MAX_WORDS, pronoun_object, whole

SUBJECT: Final = re.compile(
    r"^(?:(?i:so|and|but|well|oh|also|then|yeah|yes|actually|plus|now|honestly|anyway|btw|lol|haha|wow|ok|okay"
    r"|hey|hi|um|uh|sure|yep|nah|right|alright|guess\s+what|in\s+fact|you\s+know|tbh|ngl|ugh|omg|update|heads\s+up"
    r"|fun\s+fact|so\s+yeah|anyways)\b[,!.:]?\s+)*"
    r"(?P<s>(?i:i|we|(?:my|our)\s+[a-z]+\s+and\s+i)|[A-Z][a-z]+\s+(?i:and\s+i)|(?i:my|our)\s+(?P<own>[a-z]+))"
    r"\s+(?P<rest>.+)$"
)
_HABITUAL: Final = re.compile(
    r"^(?i:usually|often|always|normally|generally|typically|sometimes|regularly|occasionally|mostly)\s+(?=[a-z])"
)
"""An adverb of frequency right before the verb: what follows is a habit ("I often read before bed").
The extractor takes the adverbs it knows out before a clause gets here (lexicon.ADVERBS), so only
the others still say so."""
_ADVERB: Final = re.compile(
    rf"^(?:(?i:{lx.alternation(lx.ADVERBS)}|also|always|often|sometimes|even|only|once|lately|all|both|still"
    r"|currently|now|just|recently|finally|regularly|occasionally|usually|probably|perhaps|certainly)\s+)+"
)
_AUX: Final = (
    ("plan", re.compile(r"^(?i:(?:am|are)\s+(?:planning|going|about|hoping|off)\s+to"
                        r"|will|plan\s+to|intend\s+to|(?:am|are)\s+gonna|gonna)\s+(?P<v>.+)$")),
    ("doing", re.compile(r"^(?i:(?:have|has)\s+been)\s+(?P<v>[a-z]+ing\b.*)$")),
    ("doing", re.compile(r"^(?i:am|are)\s+(?P<v>[a-z]+ing\b.*)$")),
    ("did", re.compile(r"^(?i:was|were)\s+(?P<v>[a-z]+ing\b.*)$")),
    ("did", re.compile(r"^(?i:used\s+to)\s+(?P<v>.+)$")),
    ("did", re.compile(r"^(?i:have|has|had)\s+(?P<v>(?:been\s+(?:to|in|on|at)\b|[a-z]+(?:ed|en)\b|(?i:"
                       + "|".join(sorted(lx.IRREGULAR_PARTICIPLES, key=len, reverse=True)) + r")\b).*)$")),
    ("thinks", re.compile(r"^(?i:think|believe|reckon|feel\s+like|figure)\s+(?:(?i:that)\s+)?(?P<v>.+)$")),
    ("verb", re.compile(r"^(?P<v>[A-Za-z][a-z'-]*\b.*)$")),
)  # fmt: skip
_AFTER_AUX: Final = re.compile(
    r"^((?i:am|are|was|were|have|has|had|will|have\s+been|has\s+been|used\s+to))\s+(?:(?i:"
    + lx.alternation(lx.ADVERBS)
    + r"|always|often|sometimes|even|only|once|also|all|both|recently|finally|currently|just)\s+)+"
)
_NOT_A_PLAN: Final = lx.words("never always be make stay keep the a an my our your this that it bed work school sleep")
"""Words after "going to" that make it a place or a resolve, not a plan ("going to the gym", "never")."""
_PLANNED_DOING: Final = lx.words("have do see try talk chat meet")
"""Verbs that name no activity alone but do in a plan ("off to have dinner", "gonna do some taekwondo")."""
_LIFE_EVENTS: Final = lx.words("graduated retired married engaged relocated resigned emigrated")
"""Past verbs that are a whole event alone ("I graduated last week")."""
_TOLD: Final = lx.words("talked spoke")
"""Verbs of talking that tell an event when said about or at something ("spoke at a school event")."""
_STATES: Final = lx.words("going trying thinking hoping wondering feeling keeping kept staying living")
"""Progressives of being and intending ("staying positive", "trying to"), not activities."""
_TO_LISTENER: Final = re.compile(r"\b(?i:let|tell|show|ask|thank|give|help|send|remind|meet|wish|to|for|with|about)$")
_NEGATED: Final = re.compile(
    r"^(?i:not|never|no\s+longer|don't|do\s+not|didn't|did\s+not|can't|cannot|couldn't|won't|wouldn't|haven't"
    r"|hasn't|isn't|aren't|wasn't|weren't|am\s+not|are\s+not|was\s+not|have\s+not|will\s+not|would|could"
    r"|should|might|may|must|wish|hope|guess|mean|bet|wonder|suppose"
    # a plan in the past tense was a plan, and may not have happened: "I was going to learn Spanish"
    r"|(?:was|were)\s+(?:planning|going|about|hoping|supposed|meant)\s+to)\b"
)
_CUT: Final = re.compile(
    r"\s+(?:-|–|—)\s+|\s*[:;(,]\s*|\.\.\.|\s+(?i:because|'cause|cause|coz|so\s+that|so|since|which|who|when|while|if"
    r"|but|though|although|and\s+then|and\s+it|and\s+i|and\s+we|as\s+well\s+as|whenever|until|unless|like\s+i"
    r"|to\s+be\s+honest|i\s+think|i\s+guess|lol|haha|tbh)\b"
    r"|\s+(?=(?i:you|you've|you'd)\s)"  # a relative clause about the listener ("that book you recommended")
    r"|\s+(?i:and|or)\s+(?=(?i:[a-z]+ing|[a-z]+ed|it|that|this|she|he|they|then|so|"
    + "|".join(sorted(lx.IRREGULAR_PAST, key=len, reverse=True))
    + r")\b)"
)
TIME_EXPRESSION: Final = re.compile(
    r"\s*,?\s*\b(?i:(?:yesterday|today|tomorrow|this|last|next)\s+(?:morning|afternoon|evening|night)"
    r"|over\s+the\s+weekend|the\s+whole\s+(?:week|day|weekend)|on\s+(?:the\s+)?\d{1,2}(?:st|nd|rd|th)"
    r"|yesterday|today|tonight|tomorrow|this\s+(?:morning|afternoon|evening|week|weekend|month|year)"
    r"|the\s+other\s+day|the\s+day\s+before\s+yesterday|(?:last|next|this|on)\s+(?:week|weekend|month|year|summer"
    r"|winter|spring|fall|autumn|night|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|a\s+couple(?:\s+of)?|several|\d+)"
    r"\s+(?:days?|weeks?|months?|years?)\s+ago|recently|lately|earlier|once|at\s+(?:the\s+)?age\s+(?:of\s+)?\w+"
    r"|in\s+(?:\d{4}|the\s+fall|the\s+spring|the\s+summer|the\s+winter)|anymore|any\s+more|these\s+days|again"
    r"|in\s+(?:my|our)\s+(?:spare|free|own)\s+time"
    r"|(?:every|each)\s+(?:day|week|month|year|morning|night|evening|weekend|time|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday)|most\s+days|(?:once|twice|three\s+times)\s+a\s+(?:day|week|month|year)"
    r"|on\s+(?:the\s+)?(?:weekends?|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)"
    r"|all\s+(?:week|day|month|year))\b"
)
_FILLER_END: Final = re.compile(
    r"(?:\s+(?i:too|as\s+well|and\s+stuff|and\s+all|and\s+everything|or\s+something|so\s+much|a\s+lot|again"
    r"|already|now|though|haha|lol|lmao|tbh|ngl|rn|af|imo|finally|honestly|right|here|there"
    r"|with\s+(?:it|that|them)|and|or|but)|\s*[,.!?'\"])+$"
)
_FUTURE: Final = re.compile(
    r"^(?i:next|tomorrow|tonight|this\s+coming|in\s+(?:a|an|one|two|three|a\s+few|a\s+couple\s+of|\d+)\s+(?:days?"
    r"|weeks?|months?))\b"
)
"""A time ahead of when it was said."""
_GOT: Final = re.compile(r"^(?i:got|gotten|had)\s+(?:(?i:a|an|my|our|the|this|that)\s+)?(?=\S)")
_NAMED_PROGRESSIVE: Final = re.compile(r"^(?i:(working)\s+on|(loving|enjoying))\s+(?=\S)")
_PROGRESSIVE_RELATIONS: Final = {"working": "working_on", "loving": "likes", "enjoying": "likes"}
"""Progressives the table has a relation for: "been working on my portfolio" is what the speaker is
working on; "I'm loving the new job" a liking."""
_FEEL: Final = lx.words("feel feels felt")
_NOT_FELT: Final = lx.words("like that as if it it's this the bad good sorry")
"""What after "feel" makes it a comparison, a proposition or a stock phrase, not a thing felt."""
_BEEN_PLACE: Final = re.compile(r"^(?i:been\s+(?:to|in|on|at))\b")
_BEEN_IT: Final = lx.words(
    "a an the such quite so hectic crazy tough hard rough great good nice fun ages forever awhile long wild insane "
    "there here"
)
"""What after "been" says it is the time that was ("been a busy week", "been ages"), not the speaker,
or a place said elsewhere ("been there before")."""
_STOCK: Final = re.compile(
    r"^(?i:(?:had|have|having|has)\s+(?:a\s+)?(?:blast|fun|ball|(?:good|great|nice|lovely|wonderful)\s+time"
    r"|(?:a\s+ton\s+of|so\s+much|lots\s+of|loads\s+of)\s+fun)"
    r"|figured\s+why\s+not|made\s+it|went\s+for\s+it|did\s+it)$"
)
"""A stock phrase that says nothing of what happened on its own ("had a blast" there, "figured why not"):
no fact unless more follows ("had a blast on our camping trip")."""
_HEARSAY: Final = lx.words("heard said told thought felt known mentioned asked wondered wanted seen")
"""Participles of hearing and saying: "I've heard great things about X" is no event of the speaker's."""


_LEAD_TIME: Final = re.compile(
    r"^(?:(?i:just|only|and|but|so|oh|btw),?\s+)*(?P<t>(?i:yesterday|today|tonight|this\s+(?:morning|afternoon|evening|week|weekend|month|year)|last\s+(?:night"
    r"|week|weekend|month|year|summer|winter|spring|fall|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:a|two|three|a\s+few|a\s+couple\s+of)\s+(?:days|weeks|months|years)\s+ago|the\s+other\s+day|recently"
    r"|tomorrow|next\s+(?:week|weekend|month|year|summer|winter|spring|fall|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday)|in\s+(?:a|two|three|a\s+few|a\s+couple\s+of)\s+(?:days|weeks|months)"
    r"|lately|earlier\s+today|(?:every|each)\s+(?:day|week|month|year|morning|night|evening|weekend|summer|winter"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?:\s+(?:morning|afternoon|evening|night))?"
    r"|on\s+(?:the\s+)?(?:weekends?|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)|most\s+days"
    r"|(?:once|twice|three\s+times)\s+a\s+(?:day|week|month|year)))\s*,?\s+"
)
_SYMBOLS: Final = re.compile(r"[^\w\s'+#.,&/-]+")
_FEELING_WORDS: Final = frozenset(lx.FEELINGS)
_LISTENER: Final = re.compile(r"\b(?i:you|your|yours|yourself|ya|u)\b")
_PRONOUN_ONLY: Final = lx.words(
    "it that this those these them him her me us something anything everything nothing one some so there "
    "here what lot things thing stuff way time ok okay alright fine great good better best well awesome "
    "amazing cool there busy"
)
_STOP: Final = lx.words(
    "a an the and or of to in on at for with from by as my our me us it its that this these those be been "
    "is are was were am have has had do does did so too very really just also some any all more most much "
    "many lot lots up out about into over there here then now still even"
)
_CONVERSATION_VERBS: Final = lx.words(
    "think know knew guess mean meant hope wish bet wonder agree understand hear heard feel felt "
    "appreciate thank thanks say said tell told ask asked mention mentioned remember forgot forget "
    "promise believe get totally can can't cannot could would should must might may need want "
    "love like enjoy hate am is are was were have has do did does will shall let look looked sound "
    "sounds seem seems find reckon imagine miss missed care cared thought keep kept try see "
    "talk talked spoke chat chatted least last gotta says say live lives recommend reccomend suggest"
)
_GERUND_SUBJECT: Final = re.compile(r"\b(?i:is|was|has|are|brings|gives|makes|keeps|helps|means|takes|can)\b")
_DROPPED: Final = re.compile(
    r"^(?:(?i:just|recently|finally|also|still|then|actually)\s+)?(?P<v>(?i:"
    + "|".join(sorted(lx.IRREGULAR_PAST, key=len, reverse=True))
    + r")|[A-Za-z][a-z]+ed)\s+(?=[a-z]|(?P<name>[A-Z]))"
    r"|^(?:(?i:just|recently|finally|also|still|then|actually|currently)\s+)?"
    rf"(?P<g>(?!(?i:{lx.alternation(lx.NOT_GERUNDS)})\b)[A-Za-z][a-z]+ing)\s+"
    r"(?=(?i:my|our|a|an|the|to|some|with|for|in|at|on|up|out|into|back|over)\b)"
    r"|^(?i:been)\s+(?=[a-z])"
    r"|^(?P<n>(?i:no\s+longer|not\s+really|not))\s+(?=[a-z]+ing\b|(?i:into|a|an)\b)"
    r"|^(?P<fan>(?i:(?:an?\s+)?(?:big|huge|massive|lifelong|die-?hard)\s+fan\s+of))\s+(?=\S)"
    # a taste or a habit denied ("don't like jazz", "don't use Facebook anymore"), not a request ("don't
    # worry", "don't use emojis": no verb of taste, no "anymore")
    r"|^(?P<dont>(?i:don't|do\s+not))\s+(?=(?i:like|love|enjoy|eat|drink|smoke|own|speak|play|watch"
    r"|drive|care\s+for)\b|.*\b(?i:anymore|any\s+more)\b)"
)


_GONNA: Final = re.compile(r"^(?i:gonna|going\s+to|planning\s+to|about\s+to)\s+(?!(?i:be)\b)(?=[a-z])")
_MUST: Final = re.compile(r"^(?:(?i:ugh|tbh|ok|so)\s+)*(?i:gotta|need\s+to|have\s+to)\s+(?=[a-z])")
_OPINION: Final = re.compile(r"^(?i:imo|imho|in\s+my\s+opinion|honestly|personally)\b[,:]?\s+(?!(?i:i|we)\b)(?P<v>.+)$")
_INNER: Final = re.compile(
    r"\s+(?=(?i:when|because|'cause|cause|so|that|after|before|since|where)\s+(?:I|we)\s"
    r"|(?i:tell|told)\s+(?i:you|ya)\s+(?:(?i:that)\s+)?(?:I|we)\s|(?i:let)\s+(?i:you)\s+(?i:know)\s+(?:(?i:that)\s+)?(?:I|we)\s"
    r"|(?i:but|and)\s+(?i:yesterday|today|tonight|recently|last\s+\w+|this\s+\w+|\w+\s+\w+\s+ago),?\s+(?:I|we)\s)"
)


_OPENING: Final = re.compile(
    r"^(?i:since|when|after|before|because|once|although|though|while|as\s+soon\s+as|ever\s+since)\s+(?=(?:I|we)\s)"
)


_INNER_LEAD: Final = re.compile(r"^(?:(?i:tell|told|let)\s+(?i:you|ya)\s+(?:(?i:know)\s+)?(?:(?i:that)\s+)?|\S+\s+)")


def inner_clauses(sentence: str) -> list[tuple[str, bool]]:
    """A sentence cut where a first-person clause opens inside it ("... was when I met someone") or
    opens it ("Since I lost my job, ..."), each part with whether it is such an inner clause: there
    only a told event counts ("before I turn 35" states no habit)."""
    opening = _OPENING.match(sentence)
    if opening is not None:  # "Since I lost my job at Door Dash, things have been tough"
        told, _, rest = sentence[opening.end() :].partition(", ")
        return [(told, True)] + (inner_clauses(rest) if rest else [])
    parts = _INNER.split(sentence)
    return [(parts[0], False)] + [(_INNER_LEAD.sub("", part), True) for part in parts[1:]]


@dataclass(frozen=True, slots=True)
class Clause:
    """A fact a clause states: subject, relation, value, and how much it says (``weight``)."""

    subject: str
    relation: str
    value: str
    weight: float
    when: str  # the time expression the clause placed it at ("last Friday"), "" when none


def restore_subject(sentence: str) -> str:
    """Chat drops the "I": "Lost my job as a banker yesterday", "Finishing up the choreography"."""
    if _GONNA.match(sentence):
        return _GONNA.sub("I am going to ", sentence, count=1)
    must = _MUST.match(sentence)
    if must is not None:
        return "I need to " + sentence[must.end() :]
    opinion = _OPINION.match(sentence)
    if opinion is not None:
        return "I think " + opinion.group("v")
    match = _DROPPED.match(sentence)
    if match is None:
        return sentence
    if match.group("n"):
        return "I am " + sentence
    if match.group("dont"):
        return "I " + sentence
    if match.group("fan"):  # "big fan of Taylor Swift"
        return ("I am " if sentence[:2].lower() in ("a ", "an") else "I am a ") + sentence
    verb = (match.group("v") or match.group("g") or "been").lower()
    if verb.endswith("ing"):
        if _GERUND_SUBJECT.search(sentence[match.end() :]):
            return sentence  # "Dancing with them is fun": the verb is the subject
        return "I am " + sentence
    if match.group("name") and _GERUND_SUBJECT.search(sentence[match.end() :]):
        return sentence  # "Lost Ark is so good": a title, not a told event
    if verb in _FEELING_WORDS:
        return "I am " + sentence  # "Stressed about the move": a feeling, not an event
    if verb == "been":
        return "I have been " + sentence[match.end() :]
    start = match.start("v") if match.group("v") else 0
    if sentence[start : start + 1].isupper() and sentence[start + 1 : start + 2].islower():
        sentence = sentence[:start] + sentence[start].lower() + sentence[start + 1 :]  # "Met Sarah": "I met Sarah"
    return "I " + sentence


def read_clause(clause: str) -> Clause | None:
    """The fact a first-person clause states, or None (see the module docstring)."""
    clause = clause.strip()
    lead = _LEAD_TIME.match(clause)
    match = SUBJECT.match(clause[lead.end() :] if lead else clause)
    if match is None:
        return None
    own = (match.group("own") or "").lower()
    if own and own not in lx.SPEAKER_GROUPS and own not in lx.KIN and own not in lx.PETS:
        return None  # "my code keeps crashing": about a thing, not a person in the speaker's life
    subject = "user" if not own or own in lx.SPEAKER_GROUPS else "user." + lx.KIN.get(own, own)
    habitual = _HABITUAL.match(match.group("rest")) is not None
    rest = _AFTER_AUX.sub(r"\1 ", _ADVERB.sub("", match.group("rest")))
    if rest[:4].lower() in ("and ", "or "):
        return None
    if _NEGATED.match(rest):
        return None
    for kind, pattern in _AUX:
        found = pattern.match(rest)
        if found is None:
            continue
        fact = _fact(subject, "habit" if habitual and kind == "verb" else kind, found.group("v"))
        if fact is not None and lead is not None and not fact.when:
            relation, value = fact.relation, fact.value
            if _FUTURE.match(lead.group("t")) and relation in ("did", "is_doing"):
                relation, value = _ahead(value) if relation == "did" else ("plans_to", value)
            return Clause(fact.subject, relation, value, fact.weight + 1.0, lead.group("t"))
        return fact
    return None


_ING_VERBS: Final = lx.words("sing bring swing ring cling fling sting string spring wring")
"""Verbs whose own form ends in "-ing" ("I sing in a choir"): no participle."""


def _participle(verb: str) -> bool:
    return verb.endswith("ing") and verb not in _ING_VERBS


def _fact(subject: str, kind: str, phrase: str) -> Clause | None:
    phrase = _ADVERB.sub("", phrase.strip())
    verb = phrase.split(" ", 1)[0].lower()
    if kind in ("verb", "did") and verb in _FEEL and (sense := _sensed(subject, phrase)) is not None:
        return sense
    if kind == "habit":  # "I often read before bed": a habit, whatever the verb's form
        if verb in _CONVERSATION_VERBS or _participle(verb):
            return None
        kind = "does"
    elif kind == "verb":
        told = verb in _TOLD and phrase.split(" ", 2)[1:2] in (["about"], ["at"], ["on"])  # "talked about my journey"
        talk = verb in _CONVERSATION_VERBS or verb.removesuffix("s") in _CONVERSATION_VERBS
        if talk and not told or _participle(verb):
            return None
        past = verb.endswith("ed") and not verb.endswith("eed") and len(verb) > 3  # "dyed", not "need"
        kind = "did" if verb in lx.IRREGULAR_PAST or past else "does"
    elif (
        kind == "plan"
        and (verb in _CONVERSATION_VERBS and verb not in _PLANNED_DOING or verb in _NOT_A_PLAN)
        or kind in ("did", "doing")
        and verb in _STATES
        or kind == "did"
        and (verb in _HEARSAY or verb == "be")
    ):
        return None
    cut = _CUT.search(phrase)
    value = phrase[: cut.start()] if cut else phrase
    if cut is not None and _LISTENER.match(phrase[cut.end() :]) and _TO_LISTENER.search(value):
        return None  # "wanted to let you know": said to the listener, about nothing of the speaker's
    when_match = TIME_EXPRESSION.search(value)
    when = when_match.group().strip(" ,") if when_match else ""
    value = _bare(value)
    words = value.split()
    if kind == "thinks":
        return _opinion(subject, value, when)
    content = [w for w in (x.lower().strip(".,!?'\"") for x in words[1:]) if w and w not in _STOP]
    if kind == "did" and len(words) == 1 and verb in _LIFE_EVENTS:
        return Clause(subject, "did", value, _weight(words, [verb], when), when)
    if len(words) < 2 or len(words) > MAX_WORDS or _LISTENER.search(value) or _STOCK.match(value):
        return None
    if not content or all(w in _PRONOUN_ONLY for w in content) or pronoun_object(value) or not whole(value):
        return None
    relation = {"did": "did", "doing": "is_doing", "plan": "plans_to", "does": "does"}[kind]
    if kind == "did" and verb == "been" and not _BEEN_PLACE.match(value):
        if words[1].lower() in _BEEN_IT:
            return None  # "(it's) been a busy week": about the time, not the speaker
        relation, value = "has_been", value.split(" ", 1)[1]  # "been busy volunteering at the shelter"
    if kind == "did" and _FUTURE.match(when):
        relation, value = _ahead(value)
    elif kind == "doing" and _FUTURE.match(when):
        relation = "plans_to"  # "we're adopting a cat next month"
    elif kind == "doing" and (named := _NAMED_PROGRESSIVE.match(value)) is not None:
        relation, value = _PROGRESSIVE_RELATIONS[(named.group(1) or named.group(2)).lower()], value[named.end() :]
        if not whole(value):
            return None
    return Clause(subject, relation, value, _weight(words, content, when), when)


_POINTED: Final = re.compile(r"\b(?i:(this|that)|these|those)\s+([a-z]+)$")


def _indefinite(match: re.Match[str]) -> str:
    """ "reading this book" -> "reading a book": the thing pointed at in the chat (its photo, the title
    said before) is not in the fact, so the fact says what kind of thing it is."""
    noun = match.group(2)
    if match.group(1) is None:
        return f"some {noun}"
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _bare(value: str) -> str:
    """A clause's value without its time, decoration, trailing filler and what those leave dangling;
    a thing pointed at last ("this book") said as what it is ("a book")."""
    plain = _SYMBOLS.sub("", value)
    timeless = TIME_EXPRESSION.sub("", plain)
    if _SPENT_NOTHING.search(timeless):  # "spent last weekend in Vermont": the time is what was spent
        timeless = plain
    value = _FILLER_END.sub("", timeless).strip(" ,.!?")
    return _POINTED.sub(_indefinite, DANGLING.sub("", value))


_SPENT_NOTHING: Final = re.compile(r"\b(?i:spent|spend|spending)\s+(?i:in|at|on|with|by)\b")


def _ahead(value: str) -> tuple[str, str]:
    """A "did" whose time is ahead is no told event: "got a job interview tomorrow" is an event the
    speaker has coming (``has_event``, the thing named), any other verb a plan."""
    got = _GOT.match(value)
    return ("has_event", value[got.end() :]) if got else ("plans_to", value)


def _sensed(subject: str, phrase: str) -> Clause | None:
    """What the speaker feels ("I've always felt a strong connection to art", "I feel drawn to
    serving my country"), when it is a thing and not a comparison or a proposition ("feel like",
    "felt that")."""
    rest = phrase.split(" ", 1)[1] if " " in phrase else ""
    cut = _CUT.search(rest)
    value = _bare(rest[: cut.start()] if cut else rest)
    words = value.split()
    if not words or words[0].lower() in _NOT_FELT or len(words) > MAX_WORDS or not whole(value):
        return None
    content = [w for w in (x.lower().strip(".,!?'\"") for x in words) if w not in _STOP and w not in _PRONOUN_ONLY]
    return Clause(subject, "feels", value, _weight(["felt", *words], content, ""), "") if len(content) >= 2 else None


def _opinion(subject: str, value: str, when: str) -> Clause | None:
    words = value.split()
    if len(words) < 3 or len(words) > MAX_WORDS or _LISTENER.search(value):
        return None
    first = words[0].lower().strip(",")
    if (
        first in ("about", "of", "back", "over", "through")
        or first in _PRONOUN_ONLY
        or first
        in (
            "it's",
            "that's",
            "this",
            "so",
            "i",
            "i'm",
            "we",
            "it'll",
            "there's",
            "my",
            "our",
            "his",
            "her",
            "their",
            "he",
            "she",
            "they",
            "he's",
            "she's",
        )
    ):
        return None
    content = [w for w in (x.lower() for x in words) if w not in _STOP and w not in _PRONOUN_ONLY]
    return Clause(subject, "thinks", value, _weight(words, content, when), when) if len(content) >= 2 else None


def _weight(words: list[str], content: list[str], when: str) -> float:
    """What a clause says: its content words, more for named things and numbers, more for a time."""
    named = sum(1 for w in words[1:] if w[:1].isupper() or w[:1].isdigit())
    return len(content) + named + (1.0 if when else 0.0)
