"""What erasing a user removes (``engram forget``, a `SubjectErased` MemoryEvent).

Every node the user owns (``user_id``), whatever its layer: the user's turns and what Trace derived
from them, the user's facts, dreaming's gists, rules and profiles of the user's memory, the TOC of
the user's time. Code nodes are the exception (kinds ``code_*``): a code change is the
organization's work product, shared by everyone who reads the repo's graph, so it stays; its author
attribution (``user_id``) stays with it, and the note of issue 17 says so.

Every projection applies the same rule (the view, the graph engine, the Qdrant and graph sinks),
so a replay of the log rebuilds the same stores.
"""

from __future__ import annotations

from typing import Final

KEPT_KIND_PREFIX: Final = "code_"


def erased_by(kind: str, owner: str | None, user_id: str) -> bool:
    """Whether erasing ``user_id`` removes a node of ``kind`` owned by ``owner``."""
    return owner == user_id and not kind.startswith(KEPT_KIND_PREFIX)
