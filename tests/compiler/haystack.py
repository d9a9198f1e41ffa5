"""Deterministic, realistic fixture texts: distractor memories and needles."""

from __future__ import annotations

from itertools import product

_PEOPLE = ("Maria", "Jonas", "Priya", "Tom", "Aiko", "Lucas", "Fatima", "Ben", "Chen", "Olga")
_ACTIVITIES = (
    "went hiking near the lake and took photos of the autumn trees",
    "tried a new ramen place downtown and said the broth was too salty",
    "finished reading a long novel about a family of sailors",
    "signed up for a pottery class that meets on Thursday evenings",
    "adopted a small grey cat from the shelter and named it Pebble",
    "complained that the train to work was late three days in a row",
    "planted tomatoes and basil on the balcony this spring",
    "started learning Spanish with a podcast during the commute",
    "bought a second-hand bicycle and fixed the brakes over the weekend",
    "organized a board game night with friends from the old office",
)


def distractors(n: int = 100) -> list[str]:
    """`n` distinct everyday memories (people × activities × a detail)."""
    details = ("last week", "in March", "on a rainy Sunday", "after the holidays", "with a cousin")
    out = [f"{p} {a} {d}." for d, p, a in product(details, _PEOPLE, _ACTIVITIES)]
    return out[:n]


NEEDLES: tuple[tuple[str, str], ...] = (
    ("The launch code for the Nightingale satellite is 9988.", "What is the launch code for the satellite?"),
    (
        "Dr. Okafor prescribed amoxicillin twice a day for the ear infection.",
        "Which medicine did Dr. Okafor prescribe?",
    ),
    (
        "The spare key to the studio is hidden under the blue flower pot.",
        "Where is the spare key to the studio hidden?",
    ),
    ("My passport expires on the fourth of November 2027.", "When does my passport expire?"),
    ("The wifi password at the cabin is maplesyrup42.", "What is the wifi password at the cabin?"),
)
