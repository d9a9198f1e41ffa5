"""Small closed word lists the pattern extractor leans on (languages, pets, kin, occupations).

Closed classes only: open classes (names, places, employers) are taken from capitalization.
"""

from __future__ import annotations

from typing import Final


def alternation(words: tuple[str, ...]) -> str:
    """A regex alternation, longest first so "golden retriever" wins over "retriever"."""
    return "|".join(sorted((w.replace(" ", r"\s+") for w in words), key=len, reverse=True))


def words(text: str) -> frozenset[str]:
    """A closed word list written as one string: ``words("a an the")``."""
    return frozenset(text.split())


LANGUAGES: Final = (
    "english", "french", "spanish", "german", "italian", "portuguese", "dutch", "swedish", "norwegian",
    "danish", "finnish", "polish", "czech", "russian", "ukrainian", "greek", "turkish", "arabic", "hebrew",
    "persian", "farsi", "hindi", "urdu", "bengali", "punjabi", "tamil", "telugu", "marathi", "gujarati",
    "mandarin", "cantonese", "chinese", "japanese", "korean", "vietnamese", "thai", "indonesian", "malay",
    "tagalog", "swahili", "yoruba", "igbo", "hausa", "amharic", "romanian", "hungarian", "catalan",
    "python", "go", "java", "javascript", "typescript", "rust", "c", "c++", "c#", "ruby", "kotlin", "swift",
    "scala", "haskell", "elixir", "php", "perl", "sql", "r",
)  # fmt: skip
SPOKEN: Final = frozenset(LANGUAGES[: LANGUAGES.index("python")])
"""The languages people speak (the rest of ``LANGUAGES`` are programming languages)."""

NATIONALITIES: Final = {
    "canadian": "Canada", "american": "USA", "british": "UK", "english": "England", "scottish": "Scotland",
    "irish": "Ireland", "french": "France", "german": "Germany", "italian": "Italy", "spanish": "Spain",
    "portuguese": "Portugal", "dutch": "Netherlands", "swedish": "Sweden", "polish": "Poland",
    "russian": "Russia", "ukrainian": "Ukraine", "greek": "Greece", "turkish": "Turkey", "indian": "India",
    "pakistani": "Pakistan", "chinese": "China", "japanese": "Japan", "korean": "Korea",
    "vietnamese": "Vietnam", "filipino": "Philippines", "australian": "Australia", "mexican": "Mexico",
    "brazilian": "Brazil", "argentinian": "Argentina", "nigerian": "Nigeria", "kenyan": "Kenya",
    "egyptian": "Egypt", "south african": "South Africa",
}  # fmt: skip

PETS: Final = (
    "dog", "dogs", "cat", "cats", "puppy", "kitten", "parrot", "hamster", "rabbit", "bunny", "goldfish",
    "fish", "turtle", "tortoise", "guinea pig", "golden retriever", "labrador", "poodle", "beagle",
    "bulldog", "husky", "terrier", "horse", "snake", "lizard", "ferret", "budgie", "greyhound", "dachshund",
    "corgi", "pug", "chihuahua", "german shepherd", "shepherd", "collie", "border collie", "spaniel", "retriever",
    "labradoodle", "goldendoodle", "parakeet", "cockatiel", "hedgehog", "chinchilla", "gecko", "iguana", "pony",
    "mutt", "tabby", "kittens", "puppies", "chickens", "hens", "rabbits", "budgies", "guinea pigs", "hamsters",
    "horses", "parrots", "ferrets",
)  # fmt: skip

KIN: Final = {
    "wife": "wife", "husband": "husband", "partner": "partner", "boyfriend": "boyfriend",
    "girlfriend": "girlfriend", "fiance": "partner", "fiancé": "partner", "fiancee": "partner",
    "fiancée": "partner", "son": "son", "daughter": "daughter", "sister": "sister", "brother": "brother",
    "mom": "mother", "mum": "mother", "mother": "mother", "dad": "father", "father": "father",
    "boss": "manager", "manager": "manager", "best friend": "friend", "friend": "friend", "buddy": "friend",
    "bestie": "friend",
    "roommate": "roommate", "flatmate": "roommate", "grandmother": "grandmother", "grandma": "grandmother",
    "grandfather": "grandfather", "grandpa": "grandfather", "coworker": "coworker", "colleague": "coworker",
}  # fmt: skip

OCCUPATIONS: Final = (
    "engineer", "developer", "programmer", "nurse", "doctor", "physician", "surgeon", "teacher", "professor",
    "lecturer", "analyst", "scientist", "researcher", "designer", "architect", "lawyer", "attorney",
    "accountant", "consultant", "manager", "director", "writer", "journalist", "editor", "chef", "cook",
    "pharmacist", "dentist", "electrician", "plumber", "carpenter", "mechanic", "artist", "photographer",
    "musician", "pilot", "firefighter", "officer", "paramedic", "therapist", "psychologist", "librarian",
    "salesperson", "marketer", "recruiter", "entrepreneur", "founder", "cto", "ceo", "intern",
    "administrator", "technician", "veterinarian", "vet", "assistant", "student", "freelancer", "waiter",
    "barista", "cashier", "driver", "translator", "economist", "statistician", "biologist", "chemist",
    "physicist", "principal", "coach", "trainer", "instructor", "tutor", "counselor", "counsellor", "social worker",
    "paralegal", "dietitian", "nutritionist", "optician", "midwife", "caregiver", "baker", "butcher", "farmer",
    "firefighter", "police officer", "soldier", "banker", "broker", "realtor", "agent", "producer", "director",
    "animator", "illustrator", "copywriter", "strategist", "planner", "coordinator", "specialist", "supervisor",
)  # fmt: skip

CONDITIONS: Final = (
    "asthma", "diabetes", "type 1 diabetes", "type 2 diabetes", "adhd", "migraines", "celiac disease",
    "arthritis", "anxiety", "depression", "epilepsy", "high blood pressure", "hypertension", "insomnia",
    "dyslexia", "a bad back", "tinnitus", "lactose intolerance", "celiac", "coeliac", "coeliac disease",
    "crohn's", "crohn's disease", "ibs", "pcos", "endometriosis", "sleep apnea", "eczema", "psoriasis", "long covid",
)  # fmt: skip

FEELINGS: Final = (
    "stressed", "tired", "exhausted", "sick", "ill", "anxious", "happy", "sad", "overwhelmed", "excited",
    "nervous", "bored", "burned out", "burnt out", "depressed", "frustrated", "sleepy", "lonely", "angry",
    "upset", "worried", "hungover",
)  # fmt: skip

SPORTS: Final = (
    "tennis", "football", "soccer", "basketball", "golf", "chess", "volleyball", "cricket", "badminton",
    "hockey", "baseball", "squash", "rugby", "table tennis", "ping pong", "video games", "poker", "padel",
    "pickleball", "handball",
)  # fmt: skip

INSTRUMENTS: Final = (
    "piano", "guitar", "violin", "drums", "cello", "flute", "saxophone", "sax", "bass", "trumpet",
    "ukulele", "clarinet", "harp", "keyboard", "banjo", "accordion",
)  # fmt: skip

DIETS: Final = ("vegetarian", "vegan", "pescatarian", "keto", "gluten-free", "halal", "kosher")

EVENTS: Final = (
    "interview", "job interview", "meeting", "exam", "test", "presentation", "flight", "party", "wedding",
    "concert", "game", "match", "call", "surgery", "conference", "recital", "date", "check-up", "checkup",
)  # fmt: skip

MONTHS: Final = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
)  # fmt: skip

NUMBER_WORDS: Final = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

ADVERBS: Final = (
    "now", "currently", "just", "recently", "still", "also", "actually", "really", "finally", "usually", "genuinely",
    "seriously", "literally", "pretty much", "mainly", "primarily", "happily", "proudly", "officially",
    "mostly", "generally", "basically", "even", "already", "kind of", "sort of", "kinda", "tend to",
    "totally", "absolutely", "definitely", "honestly", "normally", "typically", "both",
)  # fmt: skip
"""Adverbs that sit between a subject or auxiliary and its verb without changing the fact."""

DROPPED_SUBJECT_VERBS: Final = (
    "turned", "moved", "started", "joined", "quit", "left", "finished", "bought", "sold", "lost", "graduated",
    "got hired", "got a new job",
)  # fmt: skip
"""Past-tense verbs users open a sentence with, dropping the "I" ("Just turned 41.")."""

CARRY_VERBS: Final = (
    "live", "lived", "living", "work", "worked", "working", "speak", "speaks", "have", "had", "love", "like",
    "enjoy", "hate", "play", "study", "studied", "moved", "started", "joined", "quit", "left", "got", "bought",
    "sold", "own", "drive", "use", "need", "want", "plan", "am", "teach", "know", "grew", "stopped",
    "gave", "finished", "lost", "prefer", "can", "can't", "don't", "do", "no longer", "recently", "just",
    "also", "now", "currently", "still", "then", "became", "become", "adopted", "switched", "took",
)  # fmt: skip
"""Words that open a second predicate sharing the first clause's subject ("... and live in Y")."""

KIN_PLURALS: Final = {
    "sisters": "sister", "brothers": "brother", "sons": "son", "daughters": "daughter",
    "grandchildren": "grandchild", "cousins": "cousin",
}  # fmt: skip


DEPARTMENTS: Final = (
    "sales", "marketing", "finance", "hr", "human resources", "engineering", "it", "accounting", "operations",
    "product", "design", "support", "customer support", "customer service", "legal", "research", "r&d",
    "procurement", "logistics", "compliance", "communications", "pr", "recruiting", "admissions",
)  # fmt: skip
"""Departments one works in at an employer ("I'm in sales at Oracle")."""

SPEAKER_GROUPS: Final = frozenset({"family", "household", "team", "crew", "group", "band"})
""""Our family lives in Leeds": groups that speak for the speaker too."""

OTHERS: Final = {
    "neighbor": "neighbor", "neighbour": "neighbor", "neighbors": "neighbor", "neighbours": "neighbor",
    "parents": "parents", "in-laws": "in-laws", "kids": "children", "children": "children",
    "friends": "friend", "coworkers": "coworker", "colleagues": "coworker", "roommates": "roommate",
    "flatmates": "roommate", "landlord": "landlord", "landlady": "landlord", "classmate": "classmate",
    "classmates": "classmate", "teammate": "teammate", "teammates": "teammate", "mentor": "mentor",
    "cousin": "cousin", "uncle": "uncle", "aunt": "aunt", "niece": "niece", "nephew": "nephew", "ex": "ex",
    "grandson": "grandson", "granddaughter": "granddaughter", "uncles": "uncle", "aunts": "aunt",
}  # fmt: skip
"""People in the speaker's life the relationship patterns do not name (no ``has_<role>`` fact of
their own), singular and plural: a clause that opens on one ("our neighbors just moved to Denver")
is about them, never the speaker (``subjects.third_party``)."""


GADGETS: Final = ("phone", "laptop", "tablet", "ipad", "iphone", "computer", "desktop", "mobile", "work laptop")

NOT_GERUNDS: Final = (
    "bring", "sing", "ring", "sting", "swing", "spring", "string", "thing", "king", "wing", "cling", "fling",
    "sling", "wring", "ping", "bling", "during", "nothing", "something", "anything", "everything", "morning",
    "evening", "ceiling", "pudding", "darling", "sibling",
)  # fmt: skip
"""Words ending in "ing" that are no progressive: an imperative ("bring a jacket"), a noun, a preposition."""

IRREGULAR_PAST: Final = (
    "went", "got", "had", "made", "took", "saw", "met", "found", "bought", "brought", "came", "began", "built",
    "caught", "chose", "did", "drew", "drove", "ate", "fell", "felt", "fought", "flew", "forgot", "gave", "grew",
    "heard", "held", "hurt", "kept", "knew", "led", "left", "lent", "lost", "paid", "put", "ran", "read", "rode",
    "sang", "sat", "sold", "sent", "set", "shot", "slept", "spent", "spoke", "stood", "swam", "taught", "thought",
    "threw", "told", "tore", "understood", "woke", "won", "wore", "wrote", "broke", "became", "quit", "hit",
    "beat", "cut", "dug", "fed", "hung", "lit", "meant", "shut", "split", "spun", "stuck", "struck", "swept",
    "overcame", "sank",
)  # fmt: skip
"""Past-tense verbs that do not end in -ed (a past verb after "I" tells an event: ``did``)."""

IRREGULAR_PARTICIPLES: Final = (
    "gone", "done", "seen", "taken", "made", "had", "got", "gotten", "met", "found", "bought", "brought",
    "come", "begun", "built", "caught", "chosen", "drawn", "driven", "eaten", "fallen", "felt", "fought", "flown",
    "forgotten", "given", "grown", "heard", "held", "kept", "known", "left", "lost", "paid", "put", "read",
    "ridden", "run", "sung", "sold", "sent", "spent", "spoken", "stood", "swum", "taught", "thought", "told",
    "won", "worn", "written", "broken", "become", "quit", "overcome",
)  # fmt: skip
"""Past participles that do not end in -ed (after "have": a perfect, ``did``)."""
