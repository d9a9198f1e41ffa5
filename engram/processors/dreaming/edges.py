"""The edge types dreaming writes (re-exported by processors/dreaming/graph.py, which folds them)."""

from typing import Final

CONSOLIDATES: Final = "CONSOLIDATES"  # consolidated node -> the concept it commits
CITES: Final = "CITES"  # consolidated node -> an episode it was abstracted from
ABOUT: Final = "ABOUT"  # entity profile -> an episode that mentions the entity
