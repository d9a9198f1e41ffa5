"""The pattern table of the offline extractor: first-person statements to triples.

Order matters: negations first, then specific before general; a later pattern never takes a
span an earlier one already took. Triggers are case-insensitive (``(?i:...)``); entities
(employers, places, names) are case-sensitive capitalized phrases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from engram.processors.facts import lexicon as lx


@dataclass(frozen=True, slots=True)
class Emit:
    relation: str
    value: str = "{v}"
    confidence: float = 0.9
    subject: str = "user"
    split_list: bool = False


@dataclass(frozen=True, slots=True)
class Pattern:
    name: str
    regex: re.Pattern[str]
    emits: tuple[Emit, ...]
    agent_ok: bool = False


ENT: Final = (
    r"(?:[A-Z][\w&'.+#-]*|[a-z]+[A-Z][\w&'.-]*)(?:\s+(?:(?:of|the|de|du|la|von|van|and|&)\s+)?"
    r"(?:(?!I\b)[A-Z][\w&'.+#-]*|\d+))*"
)
PHRASE: Final = r"[^,;!?]+?"
END: Final = r"(?=\s*(?:[,;!?]|(?<!\b[A-Z])\.(?:\s|$)|$)|\s+(?:and|but|because|since|so|though|which|when|after)\b)"
DATE: Final = (
    rf"(?:the\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?i:{lx.alternation(lx.MONTHS)})\b"
    rf"|(?i:{lx.alternation(lx.MONTHS)})\s+\d{{1,2}}(?:st|nd|rd|th)?)"
)
_DAYS: Final = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WHEN_WORD: Final = rf"(?:the\s+)?(?:(?i:{lx.alternation(lx.MONTHS)}|{_DAYS})\b|(?![A-Z])[\w:]+)"
"""The word a time preposition takes: a month, a day, or a lowercase word or number ("in Lisbon" is a place)."""
WHEN: Final = (
    rf"(?:(?i:in|on|at|by)\s+{_WHEN_WORD}|(?i:next|this|tomorrow|tonight|today|{_DAYS})\b(?:\s+{_WHEN_WORD})?)"
    r"(?:\s+(?i:morning|afternoon|evening|at\s+\d{1,2}(?::\d\d)?\s*(?:am|pm)?))?"
)
THE: Final = r"(?:(?i:the)\s+)?"
TIME_TAIL: Final = (
    r"\s+(?i:last|this|next|yesterday|today|tonight|tomorrow|earlier|recently|ago|a\s+(?:few|couple|while)|in\s+\d{4}"
    r"|(?:an?|one|two|three|four|five|six|several|\d+)\s+(?:years?|months?|weeks?|days?)"
    rf"|(?:in|on|since|after|before)\s+(?:{lx.alternation(lx.MONTHS)}|\w+day|the\b)|years?|months?|weeks?|days?)\b"
)
ADV: Final = rf"(?:(?i:{lx.alternation(lx.ADVERBS)})\s+)?"
VEHICLE: Final = r"(?i:mountain\s+bike|road\s+bike|e-bike|bike|motorcycle|motorbike|truck|van|suv|car|scooter|pickup)\b"
DWELLING: Final = (
    r"flat|apartment|house|place|condo|studio|cottage|loft|bungalow|townhouse|home|farmhouse|duplex|houseboat"
)
PET_ADJ: Final = r"(?i:rescue|rescued|new|little|old|baby|sweet|senior|young|tiny|big|adopted)"
"""Words before a pet's kind that say how it is, not what breed it is."""
ADJ: Final = r"(?:(?i:old|new|small|big|little|used|vintage|second-hand|red|black|white|blue|silver|grey|gray)\s+)"
KIN_PLURAL: Final = rf"(?i:{lx.alternation(tuple(lx.KIN_PLURALS))})"
LANG_Q: Final = r"(?:(?i:a\s+(?:little|bit)(?:\s+of)?|some|basic|fluent|conversational|native)\s+)?"
ME: Final = r"(?i:\bi)"
IM: Final = r"(?i:\b(?:i'?m|i\s+am))"
WE: Final = r"(?i:\b(?:i|we))"
PETS: Final = lx.alternation(lx.PETS)
KIN: Final = lx.alternation(tuple(lx.KIN))
LANG: Final = rf"(?i:{lx.alternation(lx.LANGUAGES)})(?![\w+#])"
LANG_LIST: Final = rf"{LANG}(?:\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s*/\s*){LANG_Q}{LANG})*"
PET: Final = (
    rf"(?:(?:(?i:an?|one|two|three|four|\d+)\s+)?(?:[a-z]+\s+)?(?i:{PETS})(?:\s+(?i:puppy|pup|kitten))?"
    rf"(?:\s+(?i:named|called)\s+{ENT})?)"
)
ENT_LIST: Final = rf"{ENT}(?:\s*(?:,\s*(?:and\s+)?|\s+and\s+){ENT})*"


def _p(name: str, regex: str, *emits: Emit, agent_ok: bool = False) -> Pattern:
    return Pattern(name, re.compile(regex), emits, agent_ok)


NEGATIONS: Final = (
    # Changes first: each says what stopped and what replaced it, in that order.
    _p("switched-tool", rf"{WE}\s+(?i:(?:have\s+)?(?:switched|changed|migrated|went))\s+(?i:over\s+)?(?i:from)\s+"
       rf"{THE}(?P<x>{ENT})\s+(?i:to)\s+{THE}(?P<v>{ENT})", Emit("no_longer_uses", "{x}"), Emit("uses")),
    _p("switched-habit", rf"{WE}\s+(?i:(?:have\s+)?(?:switched|changed|went))\s+(?i:over\s+)?(?i:from)\s+"
       rf"(?P<x>[a-z][\w' ]*?)\s+(?i:to)\s+(?P<v>[a-z][\w' ]*?){END}", Emit("no_longer_likes", "{x}"), Emit("prefers")),
    _p("switched-to", rf"(?:{WE}\s+|(?:^|(?<=[,;]\s)))(?i:(?:have\s+)?switched(?:\s+over)?\s+to)\s+"
       rf"(?P<v>[a-z][\w' ]*?){END}", Emit("uses")),
    _p("moved-from-to", rf"{WE}\s+(?i:moved|relocated)\s+(?i:from)\s+(?P<x>{ENT})\s+(?i:to)\s+(?P<v>{ENT})",
       Emit("moved_from", "{x}"), Emit("lives_in")),
    _p("used-to-like", rf"{ME}\s+(?i:used\s+to\s+(?:like|love|enjoy|prefer))\s+(?P<v>{PHRASE}){END}",
       Emit("no_longer_likes")),
    _p("use-instead", rf"{WE}\s+(?i:(?:now\s+|mostly\s+|mainly\s+)?use)\s+{THE}(?P<v>{ENT})\s+(?i:instead\s+of)\s+"
       rf"{THE}(?P<x>{ENT})", Emit("no_longer_uses", "{x}"), Emit("uses")),
    _p("used-to-use", rf"{WE}\s+(?i:used\s+to\s+use)\s+(?P<v>{ENT})", Emit("no_longer_uses")),
    # a notice handed in ends the job: "handed my notice in at St James's", "I resigned from Deloitte"
    _p("notice", rf"{ME}\s+(?i:(?:handed|gave|put)\s+(?:in\s+)?(?:my\s+)?notice(?:\s+in)?\s+(?:at|to))\s+(?P<v>{ENT})"
       rf"|{ME}\s+(?i:resigned\s+from)\s+(?P<w>{ENT})", Emit("no_longer_works_at", "{v}{w}")),
    # a promotion told as what they made the speaker: "they've made me a senior staff nurse"
    _p("made-me", rf"(?i:\bmade\s+me|\bpromoted\s+me\s+to)\s+(?i:an?\s+)?(?P<v>(?:[a-z]+\s+){{0,3}}"
       rf"(?i:{lx.alternation(lx.OCCUPATIONS)}))\b", Emit("works_as")),
    _p("promoted", rf"(?:{ME}|(?i:\bguess\s+who))\s+(?i:(?:just\s+)?(?:got|was|have\s+been|'ve\s+been)\s+promoted"
       rf"\s+to)\s+(?i:an?\s+)?"
       rf"(?P<v>[a-z][a-z -]*?)(?=\s+(?i:at|in|last|this|on|yesterday|today)\b|{END})", Emit("works_as")),
    _p("died", rf"(?i:\b(?:my|our))\s+(?:(?i:old|late|sweet|little|beloved|poor|dear)\s+)?"
       rf"(?P<v>(?:(?i:{PETS}|{KIN}),?(?:\s+{ENT},?)?))\s+(?i:(?:just\s+)?(?:died|passed\s+away|passed))\b",
       Emit("died")),
    # a pet or a person the speaker named before, said by name: "Milo passed away last week" (a
    # negation: it retracts only a fact whose value names them, and is never stored itself)
    _p("died-named", r"^(?:(?i:so|and|but|sadly|unfortunately|well)\W+)*(?!(?:It|He|She|They|This|That|We|You)\b)"
       r"(?P<v>[A-Z][a-z]+)\s+"
       r"(?i:(?:just\s+|sadly\s+|finally\s+)?(?:died|passed\s+away))\b", Emit("died")),
    _p("lost-job", rf"{ME}\s+(?i:lost|quit)\s+(?i:my|the)\s+(?i:job)\b(?!\s+(?i:at"
       rf"|with))", Emit("no_longer_works_at", "")),
    # a diet given up: "I'm not vegetarian anymore", "I'm no longer vegan"
    _p("not-diet", rf"{IM}\s+(?i:not|no\s+longer)\s+(?i:an?\s+)?(?P<v>(?i:{lx.alternation(lx.DIETS)}))\b",
       Emit("no_longer_diet")),
    # the end of a leave or a break: "I'm back at work now" ends every current status
    _p("back-at-work", rf"(?:{IM}\s+|^(?:(?i:finally|so|and)\s+)?)"
       rf"(?i:back\s+(?:at|to)\s+work|no\s+longer\s+on\s+(?:[a-z]+\s+)?leave|off\s+leave)\b",
       Emit("no_longer_status", "")),
    # home again after a trip: "back home in Boston now" ends where the speaker was for now
    _p("back-home", rf"(?:{IM}\s+|{ME}\s+(?i:got|flew|came)\s+|^(?:(?i:finally|so|and)\s+)?)(?i:back\s+home)\b",
       Emit("no_longer_in", "")),
    # an allergy denied: "turns out I'm not allergic to peanuts after all", "I'm no longer allergic to cats"
    _p("not-allergic", rf"(?i:\b(?:not|no\s+longer)\s+allergic\s+to)\s+(?P<v>[a-z][a-z ]*?){END}",
       Emit("no_longer_allergic_to")),
    _p("left-job", rf"{ME}\s+(?i:no\s+longer|don'?t|do\s+not|used\s+to|(?:have\s+)?(?:stopped|quit)|left)\s+"
       rf"(?i:work|working)\s+(?i:at|for)\s+(?P<v>{ENT})", Emit("no_longer_works_at")),
    _p("not-at-employer", rf"{IM}\s+(?i:no\s+longer)\s+(?i:(?:working\s+|employed\s+)?(?:at|for|by))\s+(?P<v>{ENT})"
       rf"|{IM}\s+(?i:not)\s+(?i:(?:working\s+|employed\s+)?(?:at|for|by))\s+(?P<w>{ENT})\s+(?i:anymore|any\s+more)",
       Emit("no_longer_works_at", "{v}{w}")),
    # let go by an employer: "I got laid off from Twitter", "my last day at Netflix was Friday"
    _p("laid-off", rf"{ME}\s+(?i:(?:just\s+)?got|was|have\s+been|'ve\s+been)\s+(?i:laid\s+off|let\s+go|fired)\s+"
       rf"(?i:from|by|at)\s+(?P<v>{ENT})"
       rf"|(?:(?i:\bmy)\s+|^)(?i:last\s+day)\s+(?i:at|with)\s+(?P<w>{ENT})\s+(?i:was|is|will\s+be)\b",
       Emit("no_longer_works_at", "{v}{w}")),
    _p("quit-employer", rf"{ME}\s+(?i:quit|left)\s+(?i:(?:my\s+)?(?:job|position|role)\s+(?:at|with)\s+)?"
       rf"(?P<v>{ENT})",
       Emit("no_longer_works_at")),
    _p("moved-from", rf"{WE}\s+(?i:moved\s+(?:out\s+of|away\s+from|from)|used\s+to\s+live\s+in"
       rf"|(?:no\s+longer|don'?t|do\s+not)\s+live\s+in)\s+(?P<v>{ENT})"
       rf"|{IM}\s+(?i:no\s+longer\s+(?:living\s+)?in)\s+(?P<w>{ENT})"
       rf"|{IM}\s+(?i:not\s+(?:living\s+)?in)\s+(?P<x>{ENT})\s+(?i:anymore"
       rf"|any\s+more)", Emit("moved_from", "{v}{w}{x}")),
    _p("no-longer-student", rf"{IM}\s+(?i:no\s+longer\s+(?:a\s+student|studying)\s+at)\s+(?P<v>{ENT})"
       rf"|{ME}\s+(?i:graduated\s+from|dropped\s+out\s+of)\s+(?P<w>{ENT})", Emit("no_longer_studies_at", "{v}{w}")),
    _p("no-longer-uses", rf"(?:{IM}\s+(?i:not|no\s+longer)\s+(?i:using)|{ME}\s+(?i:don'?t|do\s+not"
       rf"|no\s+longer)\s+(?i:use)"
       rf"|{WE}\s+(?i:(?:have\s+)?(?:stopped|quit)\s+using|(?:have\s+)?(?:got\s+rid\s+of|ditched|dropped)))"
       rf"\s+(?P<v>{ENT})", Emit("no_longer_uses")),
    _p("no-longer-likes", rf"{ME}\s+(?i:don'?t|do\s+not)\s+(?i:like|enjoy|love)\s+(?P<v>{PHRASE})\s+(?i:anymore"
       rf"|any\s+more)"
       rf"|{ME}\s+(?i:no\s+longer)\s+(?i:like|enjoy|love)\s+(?P<w>{PHRASE}){END}"
       rf"|(?:^|{IM}\s+)(?i:not)\s+(?:(?i:really|that|so|as)\s+)?(?i:into)\s+(?P<x>[a-z][\w' ]*?)\s+"
       rf"(?i:anymore|any\s+more)\b"
       rf"|(?:^|{IM}\s+)(?i:no\s+longer)\s+(?:(?i:really|that|so|as)\s+)?(?i:into)\s+(?P<y>[a-z][\w' ]*?){END}",
       Emit("no_longer_likes", "{v}{w}{x}{y}")),
    _p("no-longer-has", rf"{WE}\s+(?i:don'?t|do\s+not|no\s+longer)\s+(?i:have|own)\s+(?i:an?\s+|my\s+)?"
       rf"(?P<v>{PHRASE})"
       rf"(?:\s+(?i:anymore|any\s+more))?{END}", Emit("no_longer_has")),
    _p("broke-up-named", rf"(?P<v>{ENT})\s+(?i:and\s+i)\s+(?i:broke\s+up|split\s+up|split)\b", Emit("broke_up_with")),
    _p("broke-up-kin", rf"(?:(?i:\bme\s+and\s+my)\s+(?P<v>(?i:{KIN}))|(?i:\bmy)\s+(?P<w>(?i:{KIN}))\s+(?i:and\s+i))\s+"
       rf"(?i:broke\s+up|split\s+up|split)\b", Emit("broke_up_with", "{v}{w}")),
    _p("broke-up", rf"{WE}\s+(?i:broke\s+up|split\s+up)(?:\s+(?i:with)\s+(?:(?P<v>{ENT})|(?i:my)\s+(?P<w>{KIN})))?",
       Emit("broke_up_with", "{v}{w}")),
    _p("divorced", rf"{WE}\s+(?i:got|are|'re|am|'m)\s+(?i:divorced)(?:\s+(?i:from)\s+"
       rf"(?P<v>{ENT}))?", Emit("divorced")),
    _p("lost", rf"{ME}\s+(?i:lost)\s+(?i:my|our)\s+(?P<v>[a-z]+(?:\s+[a-z]+)?)(?={TIME_TAIL}|{END})"
       rf"|(?i:\bmy|\bour)\s+(?P<w>[a-z]+(?:\s+[a-z]+)?)\s+(?i:(?:got|was|has\s+been|were)\s+stolen)\b",
       Emit("lost", "{v}{w}")),
    _p("sold", rf"{WE}\s+(?:(?i:have)\s+)?(?i:sold)\s+(?i:my|our|the)\s+(?P<v>[a-z]+(?:\s+[a-z]+)?|{ENT})(?={TIME_TAIL}"
       rf"|{END})",
       Emit("sold")),
    _p("completed", rf"{ME}\s+(?:(?i:have)\s+)?(?i:finished|completed|submitted|wrapped\s+up)\s+(?P<v>{PHRASE}){END}"
       rf"|{IM}\s+(?i:done\s+with)\s+(?P<w>{PHRASE}){END}", Emit("completed", "{v}{w}")),
    _p("cancelled", rf"(?i:\bmy)\s+(?P<v>[\w' ]+?)\s+(?i:got|was|has\s+been|is)\s+(?i:cancell?ed)"
       rf"|{ME}\s+(?i:cancell?ed)\s+(?i:my|the)\s+(?P<w>{PHRASE}){END}", Emit("cancelled", "{v}{w}")),
    _p("stopped", rf"{ME}\s+(?i:stopped|quit|gave\s+up|have\s+given\s+up|have\s+stopped|have\s+quit|no\s+longer)\s+"
       rf"(?P<v>[a-z][\w ]*?)(?=\s*[,.;!]|\s+(?i:after|because|since|when)\b|{TIME_TAIL}|$)",
       Emit("stopped")),
    # a habit on hold: "I haven't played tennis since my injury", "haven't been climbing in months"
    _p("not-since", rf"{ME}\s+(?i:haven'?t|have\s+not)\s+(?i:played|been|gone|done|ridden|run|swum|practiced|practised)"
       rf"\s+(?P<v>[a-z][\w ]*?)\s+(?i:since|in\s+(?:months|years|weeks|ages|a\s+while|forever)|for\s+(?:months|years"
       rf"|weeks|ages|a\s+while))\b", Emit("stopped")),
    _p("not-anymore", rf"{ME}\s+(?i:don'?t|do\s+not)\s+(?!(?i:know|care|think|remember|understand|get|see|feel|mind"
       rf"|need"
       rf"|want|have|like|love|enjoy|live|work|use)\b)(?P<v>[a-z][\w' ]*?)\s+(?i:anymore|any\s+more)\b",
       Emit("stopped")),
)  # fmt: skip

PERSONAL: Final = (
    _p("name", rf"(?i:\bmy\s+name(?:'s|\s+is))\s+(?P<v>{ENT})"
       rf"|{IM}\s+(?!(?i:{lx.alternation(tuple(lx.NATIONALITIES))}"
       rf"|{lx.alternation(lx.LANGUAGES)})\b)(?P<w>[A-Z][a-z]+)(?=\s*(?:(?i:btw"
       rf"|by\s+the\s+way|here))?\s*(?:[,.!]|$))",
       Emit("name_is", "{v}{w}"), agent_ok=True),
    _p("call-me", r"(?i:\bcall\s+me|\b(?:everyone|everybody|people|friends|they|most\s+people)\s+calls?\s+me)"
       r"\s+(?P<v>" + ENT + ")", Emit("wants_to_be_called")),
    _p("job-in-city", rf"(?i:job\s+(?:at|with))\s+(?P<v>{ENT})\s+(?i:in)\s+(?P<c>{ENT})",
       Emit("works_at"), Emit("lives_in", "{c}", 0.85)),
    _p("lives-in", rf"{WE}\s+(?i:(?:currently\s+|now\s+|still\s+)?(?:live|am\s+living|'m\s+living|are\s+living"
       rf"|'re\s+living|reside|have\s+been\s+living|have\s+lived|have\s+settled|settled)"
       rf"\s+(?:in|(?:just\s+|right\s+)?(?:outside(?:\s+of)?|near)))\s+{THE}(?P<v>{ENT})"
       rf"(?:\s+(?i:with)\s+(?:(?i:my|our)\s+)?(?P<p>{PET}(?:\s*(?:,\s*(?:and\s+)?|\s+and\s+){PET})*)\b)?",
       Emit("lives_in"), Emit("has_pet", "{p}", split_list=True)),
    # The home said by what it is: "we live in a tiny flat in Glasgow", "I rent a studio in Brooklyn".
    _p("home-in", rf"{WE}\s+(?i:live\s+in|am\s+living\s+in|are\s+living\s+in|rent|own|(?:just\s+|recently\s+)?bought"
       rf"|have\s+bought)\s+(?i:an?|my|our|the)\s+(?!(?i:holiday|vacation|summer|beach|weekend|rental)\b)"
       rf"(?:[a-z-]+\s+){{0,3}}?(?i:{DWELLING})\s+(?i:in)\s+{THE}(?P<v>{ENT})", Emit("lives_in")),
    _p("home-is", rf"^(?i:home\s+is)\s+(?:(?i:now|currently)\s+)?(?P<v>{ENT})", Emit("lives_in")),
    _p("based-in", rf"(?i:\b(?:i'?m|i\s+am|we'?re|we\s+are)\s+(?:now\s+)?(?:based|located)\s+(?:in|out\s+of))\s+"
       rf"(?P<v>{ENT})", Emit("lives_in")),
    _p("moving-to", rf"{WE}\s*(?i:'m|'re|\s+am|\s+are)?\s+(?i:moving|relocating)\s+(?i:to)\s+(?P<v>{ENT})",
       Emit("plans_to", "move to {v}")),
    _p("moved-into", rf"(?i:\b(?:moved|moving)\s+into\s+(?:our|my|a|the)\s+(?:new\s+)?(?:place|apartment|flat|house"
       rf"|home|condo)\s+in)\s+(?P<v>{ENT})", Emit("lives_in")),
    _p("moved-to", rf"(?i:\b(?:moved|relocated)\s+(?:over\s+|back\s+)?to)\s+(?!(?i:{lx.alternation(lx.MONTHS)}|next"
       rf"|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)(?P<v>{ENT})", Emit("lives_in")),
    _p("role-at", rf"{IM}\s+(?i:an?)\s+(?P<r>(?:[A-Z]{{2,4}}\s+)?(?:[a-z][a-z ]*?\s)?"
       rf"(?i:{lx.alternation(lx.OCCUPATIONS)}))(?<![Ss]tudent)\s+(?i:at|for)\s+(?P<v>{ENT})",
       Emit("works_as", "{r}"), Emit("works_at")),
    _p("works-at", rf"{WE}\s+(?i:(?:currently\s+|still\s+)?(?:work|am\s+working|'m\s+working|have\s+been\s+working"
       rf"|have\s+worked|started\s+working|started|am\s+starting|(?:got|was|have\s+been)\s+hired|am\s+employed"
       rf"|am\s+interning|'m\s+interning|intern)\s+"
       rf"(?:remotely\s+|full-time\s+|part-time\s+)?(?:at|for|by))"
       rf"\s+{THE}(?P<v>{ENT})(?:\s+(?i:as\s+an?)\s+(?P<r>[a-z][a-z ]*?(?i:{lx.alternation(lx.OCCUPATIONS)})))?",
       Emit("works_at"), Emit("works_as", "{r}")),
    _p("new-job", rf"(?i:\b(?:started|start|starting|got|landed|accepted|took|have)\s+(?:a\s+|my\s+|the\s+)?(?:new\s+)?"
       rf"(?:job|position"
       rf"|role|gig)\s+(?:at|with)(?:\s+an?\s+(?:[a-z]+\s+)?(?:startup|company|firm|agency|studio|lab|shop)\s+"
       rf"(?:called|named))?)"
       rf"\s+(?P<v>{ENT})|{ME}\s+(?i:joined)\s+(?P<w>{ENT})", Emit("works_at", "{v}{w}")),
    # hired, told from the employer's side: "Google hired me last month", "Stripe just took me on"
    _p("hired-me", rf"(?P<v>{ENT})\s+(?i:(?:just\s+|finally\s+)?(?:hired\s+me|took\s+me\s+on|has\s+hired\s+me"
       rf"|offered\s+me\s+the\s+job))\b(?!\s+(?i:to|for)\b)", Emit("works_at")),  # "hired me to paint": a gig
    # a team led at an employer: "I manage a team of 10 at Amazon", "I lead the data group at Spotify"
    _p("lead-team-at", rf"{ME}\s+(?i:manage|lead|run|head|supervise)\s+(?i:a|the|our|my)\s+(?:[\w-]+\s+){{0,3}}?"
       rf"(?i:team|department|group|division|unit|squad|lab)(?:\s+(?i:of)\s+\w+)?\s+(?i:at)\s+{THE}(?P<v>{ENT})",
       Emit("works_at")),
    # the speaker's job named by where it is: "my job at Google is great", "work at KPMG has been brutal"
    _p("job-at", rf"(?:^(?:(?i:so|and|but|oh|also|well|now|honestly|tbh)\W+)*(?:(?i:my|our)\s+)?"
       rf"|(?i:\b(?:love|like|enjoy|hate)\s+(?:my|our)\s+))(?:(?i:new|current|full-time|part-time|day|summer)\s+)?"
       rf"(?i:job|work|position|role|gig|internship)\s+(?i:at|with|for)\s+{THE}(?P<v>{ENT})", Emit("works_at")),
    _p("teaches", rf"{ME}\s+(?i:teach)\s+(?!(?i:my|our|him|her|them|people|myself|us|you|kids|children)\b)"
       rf"(?P<v>[a-z][a-z ]*?)(?=\s+(?i:at|in|to|for|on)\b|{END})", Emit("works_as", "{v} teacher")),
    # a department at an employer: "I'm in sales at Oracle", "I work in marketing for Nike"
    _p("works-in-department", rf"(?:{IM}|{ME}\s+(?i:work))\s+(?i:in)\s+(?i:{lx.alternation(lx.DEPARTMENTS)})\s+"
       rf"(?i:at|for)\s+(?P<v>{ENT})", Emit("works_at")),
    _p("works-as", rf"{ME}\s+(?i:work|freelance|moonlight)\s+(?i:as\s+an?)\s+(?P<v>[a-z][a-z -]*?)"
       rf"(?=\s+(?i:at|for|in)\b|{END})",
       Emit("works_as")),
    _p("occupation", rf"(?:{IM}|{ME}\s+(?i:have\s+been|(?:just\s+|finally\s+)?(?:became|have\s+become)"
       rf"|work\s+as))\s+(?i:an?)\s+(?P<v>(?:[a-z]+\s+(?=[a-z]*[A-Z]))?(?:[a-z]*[A-Z][\w+#.]*\s+)?(?:[a-z]+\s+){{0,2}}"
       rf"(?i:{lx.alternation(lx.OCCUPATIONS)}))\b"
       rf"(?!\s+(?:at|of)\b)",
       Emit("works_as"), agent_ok=True),
    _p("age", rf"(?:{IM}|{ME}\s+(?i:just\s+)?(?i:turned))\s+(?P<v>\d{{1,3}})(?=\s*(?i:years?\s+old|yo)\b|\s+"
       rf"(?i:last|this|in|on|yesterday|today|now)\b|{END})",
       Emit("age_is")),
    _p("from", rf"(?:{IM}\s+(?i:originally\s+)?(?i:from)|{ME}\s+(?i:come\s+from|grew\s+up\s+in"
       rf"|was\s+raised\s+in))\s+(?:(?i:an?\s+(?:small\s+|tiny\s+|little\s+)?(?:town|village|city|suburb)"
       rf"\s+(?:in|outside(?:\s+of)?|near)\s+))?(?P<v>{ENT})", Emit("is_from")),
    _p("from-said", rf"^(?i:originally|born\s+and\s+raised)\s+(?i:from|in)\s+(?P<v>{ENT})", Emit("is_from")),
    _p("lives-with-in", rf"{WE}\s+(?i:live|am\s+living|are\s+living)\s+(?i:with)\s+(?:[\w']+\s+){{1,4}}?(?i:in)\s+"
       rf"(?P<v>{ENT})", Emit("lives_in")),
    _p("been-in", rf"{WE}\s+(?i:have|'ve)\s+been\s+(?:(?i:living|based)\s+)?(?i:in)\s+(?P<v>{ENT})\s+(?i:for|since)\s+"
       rf"(?:(?i:like|about|almost|over|nearly|around)\s+)?(?i:\d+|a|an|two|three|four|five|six|seven|eight|nine|ten"
       rf"|a\s+few|a\s+couple\s+of|several)\s+(?i:years?|months?)\b", Emit("lives_in")),
    _p("nationality", rf"{IM}\s+(?P<v>(?i:{lx.alternation(tuple(lx.NATIONALITIES))}))\b(?!\s+(?i:speaker|food"
       rf"|citizen))",
       Emit("is_from", "{nationality}")),
    _p("born-in", rf"{ME}\s+(?i:was\s+born\s+in)\s+(?P<v>{ENT})", Emit("born_in")),
    _p("studies-at", rf"{ME}\s+(?i:study|studied|am\s+studying|'m\s+studying)\s+(?P<s>[a-z][a-z ]+?)\s+"
       rf"(?i:at)\s+(?P<v>{ENT})",
       Emit("studies", "{s}"), Emit("studies_at")),
    _p("degree-at", rf"{IM}\s+(?i:doing|pursuing|finishing|working\s+on|studying\s+for)\s+(?i:an?\s+|my\s+)?"
       rf"(?i:master'?s|masters|phd|ph\.d\.|bachelor'?s|degree|doctorate|mba|msc|bsc)"
       rf"(?:\s+(?i:in)\s+(?P<s>[a-z][a-z ]*?)|(?:\s+[\w-]+){{0,3}}?)\s+(?i:at)\s+{THE}(?P<v>{ENT})",
       Emit("studies_at"), Emit("studies", "{s}")),
    _p("studying", rf"{IM}\s+(?i:studying|majoring\s+in|doing\s+(?:an?\s+|my\s+)?(?:master'?s|masters|phd|degree"
       rf"|bachelor'?s|doctorate)\s+in)\s+(?!(?i:for|with|hard|late|all|so|a\s+lot)\b)(?P<v>[a-z][a-z ]*?)"
       rf"(?=\s+(?i:at|in|for|with|on|this|next|last)\b|{END})",
       Emit("studies")),
    _p("year-of", rf"{IM}\s+(?i:in)\s+(?i:my|the)\s+(?i:first|second|third|fourth|final|last)\s+(?i:year)\s+"
       rf"(?i:of)\s+(?:(?i:my|a|an|the)\s+)?(?P<v>[a-z]+(?:\s+[a-z]+)?)\s+(?i:school|degree|course|program"
       rf"|programme)\b", Emit("studies")),
    _p("year-student", rf"{IM}\s+(?i:an?)\s+(?i:first|second|third|fourth|fifth|final|last|1st|2nd|3rd|4th)[\s-]+"
       rf"(?i:year)\s+(?P<v>(?!(?i:grad|graduate|phd|college|university|uni|high|exchange)\b)[a-z]+(?:\s+[a-z]+)?)\s+"
       rf"(?i:student)\b", Emit("studies")),
    _p("student-at", rf"{IM}\s+(?i:an?\s+(?:[\w-]+\s+){{0,3}}?student\s+at)\s+{THE}(?P<v>{ENT})", Emit("studies_at")),
    # A pet named later in the sentence: "we adopted a greyhound two weeks ago, her name is Luna".
    _p("pet-named-later", rf"(?<!used to )(?i:\b(?:have|'ve\s+got|have\s+got|got|adopted|rescued))\s+(?i:an?\s+)?"
       rf"(?P<v>(?:[a-z]+\s+)?(?i:{PETS}))\b[^.!?]*?\b(?i:her|his|its|their)\s+(?i:name(?:'s|\s+is))\s+"
       rf"(?P<n>{ENT})", Emit("has_pet", "{v} named {n}")),
    _p("pet", rf"(?<!used to )(?i:\b(?:have|'ve\s+got|have\s+got|got|adopted|rescued|own))\s+"
       rf"(?P<v>{PET}(?:\s*(?:,\s*(?:and\s+)?|\s+and\s+){PET})*)\b",
       Emit("has_pet", split_list=True)),
    # A pet and its name said of it: "our new kitten is called Pip", "my dog's name is Bruno".
    _p("pet-called", rf"(?i:\b(?:my|our))\s+(?:{PET_ADJ}\s+)?(?P<v>(?:[a-z]+\s+)?(?i:{PETS}))"
       rf"(?:\s+(?i:is\s+called|is\s+named|name\s+is)|(?i:'s\s+called|'s\s+named|'s\s+name\s+is))\s+"
       rf"(?P<n>[A-Z][a-z]+)\b",
       Emit("has_pet", "{v} named {n}")),
    # A pet named some time after it came: "ok the kitten finally has a name: Biscuit".
    _p("pet-has-a-name", rf"(?i:\b(?:the|our|my))\s+(?P<v>(?:[a-z]+\s+)?(?i:{PETS}))\s+"
       rf"(?i:(?:finally\s+|now\s+)?has\s+a\s+name)\s*[:,-]?\s*(?P<n>[A-Z][a-z]+)\b", Emit("has_pet", "{v} named {n}")),
    # A pet introduced by name alone, as a sentence of its own: "(we got a puppy!) A beagle called Ziggy".
    _p("pet-introduced", rf"^(?i:an?)\s+(?:{PET_ADJ}\s+)?(?P<v>(?:[a-z]+\s+)?(?i:{PETS}))\s+(?i:called|named)\s+"
       rf"(?P<n>[A-Z][a-z]+)\b", Emit("has_pet", "{v} named {n}")),
    _p("intolerant", rf"{IM}\s+(?P<v>[a-z]+)\s+(?i:intolerant)\b", Emit("allergic_to")),
    _p("allergy", rf"(?<!not )(?<!longer )(?i:\ballergic\s+to)\s+(?P<v>[a-z][a-z ]*?){END}", Emit("allergic_to")),
    _p("an-allergy", rf"{WE}\s+(?i:have|'ve\s+got|have\s+got|got)\s+(?i:an?\s+)?(?:(?i:severe|bad|mild|serious)\s+)?"
       rf"(?P<v>[a-z]+(?:\s+[a-z]+)?)\s+(?i:allergy)\b", Emit("allergic_to")),
    _p("condition-said", rf"{IM}\s+(?:(?i:a)\s+)?(?P<v>(?i:colou?r-?blind|(?:type\s+[12]\s+)?diabetic|asthmatic"
       rf"|dyslexic|epileptic|deaf|autistic"
       rf"|hard\s+of\s+hearing|vision\s+impaired|visually\s+impaired))\b", Emit("has_condition")),
    # A diagnosis names a condition whatever it is: "got diagnosed with celiac last year".
    _p("diagnosed", rf"{ME}\s+(?i:was|got|have\s+been|just\s+got|recently\s+got)\s+(?i:diagnosed\s+with)\s+"
       rf"(?:(?i:an?|mild|severe|early|stage\s+\w+)\s+)*(?P<v>[a-z][a-z' -]*?)(?=\s+(?i:last|this|in|on|a|two|three"
       rf"|yesterday|today|recently|back|after|at|by)\b|{END})", Emit("has_condition")),
    _p("condition", rf"{ME}\s+(?i:have|have\s+had|live\s+with|suffer\s+from|(?:was|got"
       rf"|have\s+been)\s+diagnosed\s+with)\s+"
       rf"(?P<v>(?i:{lx.alternation(lx.CONDITIONS)}))\b", Emit("has_condition")),
)  # fmt: skip

RELATIONSHIPS: Final = (
    _p("relative-does", rf"(?i:\bmy)\s+(?P<role>(?i:{KIN}))(?:,?\s+(?P<n>{ENT}),?)?\s+{ADV}(?i:lives\s+in"
       rf"|is\s+living\s+in)\s+"
       rf"(?P<v>{ENT})", Emit("has_{role}", "{n}"), Emit("lives_in", subject="user.{role}")),
    _p("relative-works", rf"(?i:\bmy)\s+(?P<role>(?i:{KIN}))(?:,?\s+(?P<n>{ENT}),?)?\s+{ADV}(?i:works\s+(?:at"
       rf"|for))\s+(?P<v>{ENT})",
       Emit("has_{role}", "{n}"), Emit("works_at", subject="user.{role}")),
    _p("relative-is", rf"(?i:\bmy)\s+(?P<role>(?i:{KIN}))(?:,?\s+(?P<n>{ENT}),?)?\s+{ADV}(?i:is|'s)\s+(?i:an?)\s+"
       rf"(?P<v>(?:[a-z]+\s+){{0,2}}(?i:{lx.alternation(lx.OCCUPATIONS)}))\b",
       Emit("has_{role}", "{n}"), Emit("works_as", subject="user.{role}")),
    _p("relative-likes", rf"(?i:\bmy)\s+(?P<role>(?i:{KIN}))(?:,?\s+(?P<n>{ENT}),?)?\s+{ADV}(?i:is\s+obsessed\s+with"
       rf"|is\s+(?:really\s+|super\s+)?into|loves|adores)\s+(?P<v>{PHRASE}){END}",
       Emit("has_{role}", "{n}"), Emit("likes", subject="user.{role}")),
    _p("relative-plays", rf"(?i:\bmy)\s+(?P<role>(?i:{KIN}))(?:,?\s+(?P<n>{ENT}),?)?\s+{ADV}(?i:plays)\s+(?i:the\s+)?"
       rf"(?P<v>(?i:{lx.alternation(lx.INSTRUMENTS)}))\b",
       Emit("has_{role}", "{n}"), Emit("plays_instrument", subject="user.{role}")),
    # "my cat Mochi ...": a pet and its name (the rest of the clause is about the pet, not the speaker).
    _p("pet-name", rf"(?i:\b(?:my|our))\s+(?P<v>(?:[a-z]+\s+)?(?i:{PETS})),?\s+(?P<n>[A-Z][a-z]+)\b(?!\s+[A-Z])",
       Emit("has_pet", "{v} named {n}")),
    # "my dog is a border collie called Rex": the pet's breed and name.
    _p("pet-is-named", rf"(?i:\b(?:my|our))\s+(?i:{PETS})\s+(?i:is)\s+(?i:an?)\s+(?P<v>(?:[a-z]+\s+){{0,2}}[a-z]+)\s+"
       rf"(?i:called|named)\s+(?P<n>[A-Z][a-z]+)\b", Emit("has_pet", "{v} named {n}")),
    _p("kin-named", rf"(?i:\bmy)\s+(?:(?i:new|current)\s+)?(?P<role>(?i:{KIN}))"
       rf"(?i:'s\s+name\s+is|\s+is\s+(?:called|named)|\s+is|,)?\s+"
       rf"(?P<v>[A-Z][a-z]+)"
       r"(?!\s+[A-Z])", Emit("has_{role}")),
    _p("reports-to", rf"{ME}\s+(?i:(?:now\s+|directly\s+)?report\s+(?:directly\s+)?to)\s+(?P<v>[A-Z][a-z]+)\b"
       r"(?!\s+[A-Z])", Emit("has_manager")),
    _p("have-kin-named", rf"{WE}\s*(?i:\s+have|'ve|\s+have\s+got|'ve\s+got)\s+(?i:an?)\s+"
       rf"(?:(?i:younger|older|little|big|baby|twin)\s+)?"
       rf"(?P<role>(?i:{KIN}))"
       rf"\s+(?i:named|called)\s+(?P<v>{ENT})", Emit("has_{role}")),
    _p("children", rf"{WE}\s+(?i:have|'ve\s+got|have\s+got)\s+(?P<v>(?i:{lx.alternation(lx.NUMBER_WORDS)})|\d+)\s+"
       rf"(?i:kids|children)",
       Emit("has_children")),
    _p("siblings", rf"{WE}\s+(?i:have|have\s+got)\s+(?P<v>(?i:{lx.alternation(lx.NUMBER_WORDS)}|\d+)\s+"
       rf"(?:(?i:younger|older|little|big|step|half)[\s-]+)?(?P<role>{KIN_PLURAL}))\b", Emit("has_{role}")),
    _p("married", rf"{IM}\s+(?i:married\s+to)\s+(?P<v>{ENT})", Emit("married_to")),
    _p("engaged", rf"(?:{IM}|{ME}\s+(?i:just\s+|recently\s+)?(?i:got|have\s+got))\s+"
       rf"(?i:engaged\s+to|dating|seeing)\s+(?P<v>{ENT})", Emit("has_partner")),
    # "Emma and I got engaged!", "Sam and I just got married"
    _p("we-engaged", r"^(?:(?i:so|and|omg|guess\s+what)\W+)*(?:(?i:my)\s+[a-z]+\s+)?(?P<v>[A-Z][a-z]+)\s+"
       r"(?i:and\s+I)\s+"
       r"(?i:(?:just\s+|finally\s+)?(?:got|are|are\s+getting|'re\s+getting)\s+(?:engaged|married))\b",
       Emit("has_partner")),
)  # fmt: skip

TEMPORAL: Final = (
    _p("birthday", rf"(?i:\bmy\s+birthday(?:'s|\s+is))\s+(?i:on\s+)?(?:the\s+)?(?P<v>{DATE})"
       rf"|(?i:\bit(?:'s|\s+is)\s+my\s+birthday)\s+(?i:on\s+)?(?:the\s+)?(?P<w>{DATE})", Emit("birthday_is", "{v}{w}")),
    _p("anniversary", rf"(?i:\bmy\s+(?:wedding\s+)?anniversary(?:'s|\s+is))\s+(?i:on\s+)?(?:the\s+)?(?P<v>{DATE})",
       Emit("anniversary_is")),
    _p("deadline", rf"(?i:\b(?:my|the|our)\s+(?:[a-z]+\s+)?deadline(?:\s+for\s+[\w ]+?)?\s+is)\s+(?i:on\s+)?"
       rf"(?P<v>{DATE}|{WHEN})",
       Emit("deadline_is")),
    _p("appointment", rf"{WE}\s+(?i:have|'ve\s+got|have\s+got|got)\s+(?i:an?)\s+(?P<v>[\w' ]*?"
       rf"(?i:appointment)\b[^,;!?]*?)"
       r"(?=\s*[,.;!?]|$)", Emit("has_appointment")),
    _p("event", rf"{WE}\s+(?i:have|'ve\s+got|have\s+got)\s+(?i:an?)\s+(?P<v>(?:[a-z]+\s+)?"
       rf"(?i:{lx.alternation(lx.EVENTS)})\b[^,;!?]*?)"
       r"(?=\s*[,.;!?]|$)", Emit("has_event")),
    _p("rescheduled", rf"(?i:\b(?:my|the|our))\s+(?P<e>(?:[a-z]+\s+)?(?i:{lx.alternation(lx.EVENTS)}|appointment))\s+"
       rf"(?:(?i:got|was|has\s+been|is|'s)\s+)?(?i:moved|rescheduled|pushed(?:\s+back)?|changed|postponed"
       rf"|brought\s+forward)\s+(?i:to\s+)?(?P<t>{DATE}|{WHEN})", Emit("{e}_date", "{t}")),
    _p("rescheduled-by", rf"(?i:\b(?:moved|rescheduled|pushed(?:\s+back)?|changed|postponed))\s+(?i:my|our|the)\s+"
       rf"(?P<e>(?:[a-z]+\s+)?(?i:{lx.alternation(lx.EVENTS)}|appointment))\s+(?i:to)\s+(?P<t>{DATE}|{WHEN})",
       Emit("{e}_date", "{t}")),
    _p("my-event", rf"(?i:\b(?:my|the|our))\s+(?:[a-z]+'s\s+)?"
       rf"(?P<e>(?:[a-z]+\s+)?(?i:{lx.alternation(lx.EVENTS)}|appointment))"
       rf"(?:\s+(?i:with)\s+{ENT})?\s+(?i:is|'s)\s+(?:(?i:on|at)\s+)?(?P<t>{DATE}|{WHEN})", Emit("{e}_date", "{t}")),
    # "my wife and I are going to Rome": the clause split at "and" leaves "I are going to Rome"
    _p("trip", rf"(?i:\b(?:i'?m|i\s+am|we'?re|we\s+are|(?:and\s+)?i\s+are)\s+"
       rf"(?:flying|going|traveling|travelling|heading|driving|off)\s+to)"
       rf"\s+(?P<v>{ENT})(?P<t>\s+{WHEN})?", Emit("has_trip", "{v}{t}")),
    _p("a-trip", rf"{WE}\s+(?i:have|'ve\s+got|have\s+got|got)\s+(?i:an?)\s+(?:[a-z]+\s+)?(?i:trip)\s+(?i:to)\s+"
       rf"(?P<v>{ENT})", Emit("has_trip")),
    _p("road-trip", rf"{WE}\s*(?i:'re|\s+are|'m|\s+am)\s+(?i:doing|taking|going\s+on|planning)\s+(?i:an?)\s+"
       rf"(?P<v>(?:[a-z]+\s+)?(?i:trip)\b[^,;!?]*?)(?=\s+(?i:next|this|in|on|tomorrow|tonight|over)\b|{END})",
       Emit("has_trip")),
    _p("appointment-said", r"^(?P<v>(?:[a-z]+\s+)?(?i:appointment|appt))\s+(?:(?i:on|is|at)\s+)?(?=(?i:mon|tue|wed|thu"
       r"|fri|sat|sun|tomorrow|today|tonight|next|this)\w*\b)", Emit("has_appointment")),
    _p("will-be-in", rf"(?i:\b(?:i'?ll|i\s+will|we'?ll)\s+be\s+in)\s+(?P<v>{ENT})"
       rf"(?P<t>\s+{WHEN}|\s+(?i:from)\s+(?:(?i:the)\s+)?(?:\w+\s+)?\w+\s+(?i:to|until|till)\s+(?:(?i:the)\s+)?\w+(?:\s+\d+\b)?)",
       Emit("has_trip", "{v}{t}")),
)  # fmt: skip

TASKS: Final = (
    _p("remind", rf"(?i:\bremind\s+me\s+to)\s+(?P<v>{PHRASE})(?=\s*[.!;]|$)", Emit("needs_to")),
    _p("needs-to", rf"{ME}\s+(?i:(?:really\s+)?(?:need\s+to|have\s+to|must|should(?:\s+really)?|'ve\s+got\s+to"
       rf"|have\s+got\s+to"
       rf"|gotta))\s+(?!(?i:say|admit|agree|confess|be\s+honest|tell\s+you|ask\s+you)\b)(?P<v>{PHRASE})(?=\s*[.!;,]|$)",
       Emit("needs_to")),
    _p("working-on", rf"{IM}\s+(?i:(?:currently\s+|still\s+)?(?:working\s+on|building|writing|developing"
       rf"|preparing|putting\s+together|setting\s+up|designing|drafting|organizing|organising))\s+"
       rf"(?!(?i:from|on|at|in|with|for|to|about|through|this|that|it)\b)(?P<v>{PHRASE})(?=\s*[.!;,]"
       rf"|$)", Emit("working_on")),
    _p("plans-to", rf"(?:{IM}\s+(?i:planning|going|about)\s+to|{ME}\s+(?i:plan)\s+to)\s+"
       rf"(?!(?i:the|a|an|my|our|your|his|her|their|bed|work|school|church|class|town|sleep|be)\b)(?P<v>{PHRASE})"
       rf"(?=\s*[.!;,]|$)",
       Emit("plans_to")),
    _p("plan-is", rf"(?i:\b(?:my|our)\s+(?:big\s+|main\s+)?plan)(?:\s+(?i:this\s+year|for\s+\w+))?\s+(?i:is)\s+to\s+"
       rf"(?P<v>{PHRASE})(?=\s*[.!;,]|$)", Emit("plans_to")),
    _p("goal-is", rf"(?i:\bmy\s+(?:big\s+|main\s+)?(?:goal|dream|resolution|aim))(?:\s+(?i:this\s+year|for\s+\w+))?\s+"
       rf"(?i:is)\s+to\s+(?P<v>{PHRASE})(?=\s*[.!;,]|$)", Emit("wants_to")),
    _p("wants-to", rf"(?:{ME}\s+(?i:want|'d\s+like|would\s+like|would\s+love|hope|wish)|{IM}\s+(?i:hoping"
       rf"|aiming))\s+to\s+(?P<v>{PHRASE})(?=\s*[.!;,]"
       rf"|$)", Emit("wants_to")),
)  # fmt: skip

SKILLS: Final = (
    _p("speaks", rf"{ME}\s+(?i:also\s+)?(?i:(?:can\s+)?speak)\s+(?i:(?:a\s+little(?:\s+bit)?|a\s+bit|some|fluent|basic"
       rf"|conversational)\s+(?:of\s+)?)?"
       rf"(?P<v>{LANG_LIST}|{ENT_LIST})",
       Emit("speaks_language", split_list=True)),
    _p("fluent", rf"(?i:\bfluent\s+in)\s+(?P<v>{LANG_LIST}|{ENT_LIST})", Emit("speaks_language", split_list=True)),
    _p("instrument", rf"{ME}\s+(?i:(?:can\s+)?play|(?:have\s+)?played|(?:have|'ve)\s+been\s+playing|am\s+playing"
       rf"|'m\s+playing)\s+(?i:the\s+)?"
       rf"(?P<v>(?i:{lx.alternation(lx.INSTRUMENTS)}))\b",
       Emit("plays_instrument")),
    _p("sport", rf"{WE}\s+(?i:play)\s+(?P<v>(?i:{lx.alternation(lx.SPORTS)}))\b", Emit("plays")),
    _p("game", rf"{WE}\s+(?i:(?:mostly\s+|often\s+|usually\s+)?(?:play|have\s+been\s+playing|am\s+playing|'m\s+playing"
       rf"|'ve\s+been\s+playing))\s+(?P<v>(?!(?:I|It|The|A|My)\b){ENT})", Emit("plays")),
    _p("know-how", rf"{ME}\s+(?i:know\s+how\s+to)\s+(?P<v>{PHRASE}){END}", Emit("can")),
    _p("bilingual", rf"{IM}\s+(?i:bilingual|trilingual|multilingual)\s+(?i:in)\s+(?P<v>{LANG_LIST})"
       rf"|{IM}\s+(?i:an?\s+)?(?i:native)\s+(?P<w>{LANG})\s+(?i:speaker)",
       Emit("speaks_language", "{v}{w}", split_list=True)),
    _p("knows", rf"{ME}\s+(?i:know)\s+(?:(?i:a\s+(?:bit|little|fair\s+bit|lot)\s+of|a\s+little|some|basic)\s+)?(?!I\b)"
       rf"(?P<v>{LANG_LIST}|{ENT_LIST})", Emit("knows", split_list=True)),
    _p("writes-code", rf"{ME}\s+(?i:(?:have\s+)?(?:been\s+)?(?:writing|written|write))\s+(?P<v>{LANG_LIST})"
       rf"(?=\s+(?i:professionally|code|for|at|every|daily|since)\b|{END})", Emit("knows", split_list=True)),
    _p("codes-in", rf"(?i:\b(?:programming|coding|code|program|develop)\s+(?:mostly\s+|mainly\s+)?in)\s+"
       rf"(?P<v>{ENT_LIST})",
       Emit("knows", split_list=True)),
    _p("good-at", rf"{IM}\s+(?i:(?:pretty\s+|really\s+|very\s+)?(?:good|great|skilled|decent|competent|strong)\s+at"
       rf"|an\s+expert\s+(?:in"
       rf"|at|on)"
       rf"|proficient\s+(?:in|with)|experienced\s+(?:in|with)|(?:pretty\s+|really\s+|very\s+)?(?:good|handy"
       rf"|comfortable)\s+with"
       rf"|familiar\s+with|fluent\s+with)\s+(?P<v>{ENT_LIST})", Emit("knows", split_list=True)),
    _p("learning", rf"(?:{IM}\s+(?i:(?:currently\s+|now\s+)?(?:learning|teaching\s+myself|taking\s+(?:\w+\s+)?"
       rf"(?:lessons|classes)\s+in|trying\s+to\s+(?:get\s+better\s+at|improve\s+my)))"
       rf"|{ME}\s+(?i:(?:have\s+)?(?:started|began)\s+learning|have\s+been\s+(?:learning|teaching\s+myself)))"
       rf"\s+(?P<v>{PHRASE}){END}"
       rf"|{IM}\s+(?i:taking|doing)\s+(?P<x>[a-z]+(?:\s+[a-z]+)?)\s+(?i:classes|lessons|course)\b"
       rf"|{IM}\s+(?i:studying)\s+(?P<w>{LANG_LIST}|{ENT})(?!\s+(?i:at)\b)", Emit("is_learning", "{v}{w}{x}")),
    _p("certified", rf"{IM}\s+(?i:an?\s+certified)\s+(?P<v>{PHRASE}){END}", Emit("has_certification")),
    _p("can", rf"{ME}\s+(?i:can)\s+(?!(?i:be|use|do|get|see|try|help|find|tell|say|imagine|think|picture|handle|feel"
       rf"|enjoy|relate|understand|only|totally|definitely|really|still|always|never|make|go|hear)\b)"
       rf"(?P<v>[a-z][a-z ]*?){END}", Emit("can", confidence=0.7)),
)  # fmt: skip

PREFERENCES: Final = (
    _p("diet", rf"(?:{IM}|{ME}\s+(?i:'ve|have)\s+(?i:been|gone|become|turned)|{ME}\s+(?i:went|became|turned))\s+"
       rf"(?i:an?\s+)?(?i:(?:strict|fully|full|completely)\s+)?(?P<v>"
       rf"(?i:{lx.alternation(lx.DIETS)}))\b",
       Emit("diet_is")),
    _p("on-diet", rf"{IM}\s+(?i:(?:now\s+|currently\s+|still\s+)?on\s+(?:an?|the)\s+(?:strict\s+)?)"
       rf"(?P<v>(?i:{lx.alternation(lx.DIETS)}|paleo|low-carb|low\s+carb|mediterranean|carnivore))\s+(?i:diet)\b",
       Emit("diet_is")),
    _p("favorite", r"(?i:\bmy\s+(?:favou?rite|go-to))\s+(?P<k>[a-z]+)(?:\s+(?i:order|pick|choice))?\s+(?i:is|are)\s+"
       r"(?P<v>" + PHRASE + ")" + END,
       Emit("favorite_{k}")),
    _p("favorite-rev", r"(?P<v>\b[A-Za-z][\w ]*?)\s+(?i:is|are)\s+(?i:my\s+favou?rite)\s+"
       r"(?P<k>[a-z]+)", Emit("favorite_{k}")),
    _p("favorite-thing", r"^(?P<v>[A-Za-z][\w -]*?)(?:\s+(?i:is|are)|'s)\s+"
       r"(?i:(?:mostly\s+|really\s+|totally\s+|definitely\s+)?(?:my|our)\s+(?:absolute\s+)?(?:favou?rites?|faves?|(?:favou?rite|fave)\s+(?:thing|part|hobby|activity)|passion|jam"
       r"|thing|motivation|stress\s+relief|outlet|escape|rocks?|happy\s+place|calling|therapy)"
       r"|(?:so\s+|really\s+|particularly\s+|super\s+|very\s+)?"
       r"(?:interesting|important|special|dear)\s+to\s+me)(?=\s*[.!,;]|\s+(?i:and|but|so)\s|$)", Emit("likes")),
    _p("team-fan", rf"{IM}\s+(?i:an?\s+(?:huge|big|massive|die-hard)?\s*)(?P<v>{ENT})\s+(?i:fan|supporter)\b",
       Emit("supports_team")),
    _p("into", rf"{IM}\s+(?i:(?:really\s+|very\s+|super\s+|so\s+|totally\s+|quite\s+|big\s+)?(?:into"
       rf"|obsessed\s+with|passionate\s+about"
       rf"|crazy\s+about|hooked\s+on|all\s+about))\s+"
       rf"(?P<v>{PHRASE}){END}", Emit("likes")),
    # a new interest: "I've gotten really into cycling" (not "got into Stanford", "got into trouble")
    _p("got-into", rf"{ME}\s+(?i:have\s+)?(?i:gotten|got)\s+(?i:(?:really|super|so|very|big|totally)\s+)?(?i:into)\s+"
       rf"(?!(?i:a|an|the|some|trouble|debt|it|that|this)\b)(?P<v>[a-z][^,;!?]*?){END}", Emit("likes")),
    _p("fan-of", rf"{IM}\s+(?i:an?\s+(?:huge|big|massive)?\s*fan\s+of)\s+(?P<v>{PHRASE}){END}", Emit("likes")),
    _p("not-into", rf"{IM}\s+(?i:not\s+(?:really\s+|that\s+|very\s+|big\s+|too\s+|much\s+)?into)\s+"
       rf"(?P<v>{PHRASE}){END}",
       Emit("dislikes")),
    _p("not-fan-of", rf"{IM}\s+(?i:not\s+(?:a|much\s+of\s+a)\s+(?:big\s+|huge\s+|great\s+)?fan\s+of)\s+"
       rf"(?P<v>{PHRASE}){END}", Emit("dislikes")),
    _p("dislikes", rf"{ME}\s+(?i:(?:really\s+)?(?:hate|dislike|detest|can'?t\s+stand|don'?t\s+like|do\s+not\s+like"
       rf"|don'?t\s+enjoy))\s+(?P<v>{PHRASE}){END}", Emit("dislikes")),
    _p("rather", rf"{ME}(?i:'d|\s+would)\s+(?i:(?:much\s+)?rather)\s+(?P<v>{PHRASE})(?=\s+(?i:than)\b"
       rf"|{END})", Emit("prefers")),
    _p("prefers", rf"{WE}\s+(?i:(?:usually\s+|generally\s+|always\s+|really\s+)?prefer)\s+(?P<v>{PHRASE}){END}",
       Emit("prefers")),
    _p("cant-get-enough", rf"{ME}\s+(?i:can'?t|cannot|can\s+not)\s+(?i:get\s+enough\s+of)\s+(?P<v>{PHRASE}){END}",
       Emit("likes")),
    _p("likes", rf"{ME}\s+(?i:(?:really\s+|absolutely\s+|just\s+|totally\s+)?(?:love|like|enjoy|adore))\s+"
       rf"(?P<v>{PHRASE}){END}",
       Emit("likes")),
)  # fmt: skip

CONTEXT: Final = (
    _p("on-leave", rf"(?:{IM}\s+(?i:currently\s+)?|^(?i:currently|still)\s+)(?P<v>(?i:on\s+(?:parental|sick"
       rf"|maternity|paternity|annual|medical)\s+leave"
       r"|on\s+vacation|on\s+holiday|on\s+furlough|unemployed|retired|self-employed|pregnant|job\s+hunting"
       r"|between\s+jobs))\b", Emit("current_status")),
    _p("uses", rf"(?:{IM}\s+(?i:(?:currently\s+)?using|on)|(?:^|(?<=[,;]\s))(?i:(?:have\s+)?switched\s+(?:over\s+)?to"
       rf"|(?:now|been)\s+using)|{WE}\s+(?i:use|mostly\s+use|have\s+been\s+using"
       rf"|(?:deploy|build|develop|host)\s+(?:with|on|to|using)|(?:have\s+)?switched\s+(?:over\s+)?to|rely\s+on)"
       rf"|{WE}\s+(?i:(?:run|host|deploy|keep)\s+(?:everything|it|things|our\s+\w+|most\s+things)\s+(?:on"
       rf"|in)))\s+(?i:an?\s+|the\s+)?(?P<v>{ENT})",
       Emit("uses", split_list=True)),
    _p("writing-from", rf"{IM}\s+(?i:writing|texting|typing|messaging|chatting|replying)\s+(?i:from|on)\s+(?i:my|a)\s+"
       rf"(?P<v>(?i:{lx.alternation(lx.GADGETS)}))\b", Emit("uses")),
    # Where the speaker is for now: "now i'm stuck in Newark", "at my parents' place in Lyon for the week".
    _p("stuck-in", rf"(?:{IM}\s+(?i:(?:now\s+|currently\s+)?(?:stuck|stranded|staying|here))\s+(?i:in)"
       rf"|(?:^|{IM}\s+|(?i:staying)\s+)(?i:at)\s+(?i:my|our)\s+[\w']+(?:\s+[\w']+)?\s+(?i:place|house|flat|apartment)"
       rf"\s+(?i:in))\s+(?P<v>{ENT})", Emit("currently_in")),
    _p("working-from", rf"{IM}\s+(?i:working|staying|writing|calling)\s+(?i:remotely\s+)?(?i:from)\s+"
       rf"(?:[\w']+\s+){{0,3}}?(?:(?i:in)\s+)?(?P<v>{ENT})", Emit("currently_in")),
    _p("feeling-said", rf"^(?i:(?:ugh|honestly|tbh|so|really|kinda|super|pretty|feeling|feeling\s+so)\s+)*"
       # a feeling for the listener ("happy you had a great time") is not how the speaker is
       rf"(?P<v>(?i:{lx.alternation(lx.FEELINGS)}))\b(?!\s+(?i:of|to|that|for|you|your)\b)", Emit("is_feeling")),
    _p("feeling", rf"(?:{IM}|{ME}\s+(?i:have\s+been(?=\s+feeling)))\s+"
       rf"(?i:(?:feeling\s+)?(?:(?:so|very|really|pretty|a\s+bit|a\s+little|kind\s+of|super"
       rf"|quite)\s+)?)"
       rf"(?P<v>(?i:{lx.alternation(lx.FEELINGS)}))\b(?!\s+(?i:of|to|that|for)\b)", Emit("is_feeling")),
    _p("currently-in", rf"{IM}\s+(?i:(?:currently|now|right\s+now)\s+)?(?i:in|at|traveling\s+in|travelling\s+in"
       rf"|staying\s+in"
       rf"|visiting)\s+(?P<v>{ENT}|(?i:the)\s+(?i:airport|office|hospital|gym|station|hotel|beach|library))",
       Emit("currently_in")),
)  # fmt: skip

OTHER: Final = (
    _p("drives", rf"{ME}\s+(?i:drive|ride)\s+(?i:an?\s+|the\s+)?"
       rf"(?P<v>{ADJ}?(?:(?:19|20)\d\d\s+)?{ENT}(?:\s+{VEHICLE})?)",
       Emit("drives")),
    _p("owns-business", rf"{WE}\s+(?i:own|co-own|run)\s+(?i:an?|my\s+own|our\s+own)\s+(?P<v>(?:[a-z]+\s+){{0,2}}"
       rf"(?i:bakery|cafe|café|coffee\s+shop|restaurant|shop|store|business|company|studio|gym|bar|farm|salon"
       rf"|agency|franchise|clinic|practice|boutique))\b", Emit("owns")),
    _p("owns", rf"{WE}\s+(?i:own|bought|have|'ve\s+got|just\s+bought|got(?=\s+(?:myself\s+)?(?:an?\s+)?new\b)"
       rf"|got\s+myself|picked\s+up)\s+(?i:an?\s+|my\s+own\s+)?(?P<v>(?:"
       rf"(?i:old|brand\s+new|new|small|big|"
       rf"little|used|vintage)\s+)?(?:(?i:house|apartment|flat|condo|boat|sailboat|cabin)\b|{VEHICLE}|"
       rf"{ENT}))", Emit("owns")),
)  # fmt: skip

INSTRUCTION_VERBS: Final = (
    "answer", "respond", "reply", "keep", "use", "don't", "do not", "never", "show", "cite", "write", "avoid",
    "stop", "be", "talk", "explain", "give", "format", "include", "address", "speak", "add", "make",
)  # fmt: skip
INSTRUCTION: Final = re.compile(
    r"^(?i:(?:please\s+|pls\s+|plz\s+)?(?:(?:from\s+now\s+on|going\s+forward|moving\s+forward"
    r"|in\s+(?:the\s+)?future),?\s+)?(?:please\s+|pls\s+|plz\s+)?(?:always\s+)?)"
    rf"(?P<v>(?i:{lx.alternation(INSTRUCTION_VERBS)})\b.*?)"
    r"(?:\s+(?i:from\s+now\s+on|going\s+forward|please|pls|plz|por\s+favor|thanks|thx|ty))?\s*[.!]?$"
)

INSTRUCTION_TOPIC: Final = re.compile(
    # What an instruction to an assistant is about: its answers and how they look. People tell each
    # other "keep it up" and "don't give up"; they tell an assistant how to answer.
    r"\b(?i:answers?|responses?|repl(?:y|ies)|respond|explanations?|explain|examples?|summar(?:y|ies|ize|ise)"
    r"|sources|citations?|cite|reasoning|bullets?|bullet\s+points|emojis?|emoticons|markdown|tables?|headings"
    r"|units|metric|imperial|spelling|jargon|tone|formal|informal|concise|brief|verbose|details?|code|advice"
    r"|suggest(?:ions)?|recommend(?:ations)?|apologi[sz]e|sugarcoat|format(?:ting)?|words|sentences|paragraphs"
    rf"|links|disclaimers|{lx.alternation(lx.LANGUAGES[: lx.LANGUAGES.index('python')])})\b"
)
PLEASANTRY: Final = re.compile(
    r"^(?i:keep\s+(?:it\s+up|going|pushing|at\s+it|up\s+the|on\b)|don't\s+(?:give\s+up|worry|quit|stop)"
    r"|never\s+give\s+up|take\s+care|talk\s+(?:to\s+you|soon|later)|have\s+(?:fun|a\s+good|a\s+great))"
)
"""Encouragement and good-byes between people: never an instruction, whatever follows."""
STANDING: Final = re.compile(r"(?i:\b(?:from\s+now\s+on|going\s+forward|moving\s+forward|in\s+(?:the\s+)?future)\b)")
"""A standing rule ("from now on ..."): an instruction whatever it is about."""

ALL_PATTERNS: Final = NEGATIONS + RELATIONSHIPS + PERSONAL + TEMPORAL + TASKS + SKILLS + PREFERENCES + CONTEXT + OTHER
NEGATION_RELATIONS: Final = frozenset(e.relation for p in NEGATIONS for e in p.emits) - frozenset(
    e.relation for p in ALL_PATTERNS if p not in NEGATIONS for e in p.emits
)
"""What only the negation patterns emit: a change that retracts, never a fact stored. A change pattern
also states the new value ("moved from Leeds to York": ``lives_in`` York), and a relation another
pattern states is a fact, not a negation."""
