"""One dream: the four stages of seed 000 Table 2 over a user's memory, at an event time.

Clustering, abstraction and active dreaming (verification) run in ``consolidate``; integration is
their events (consolidated nodes, CONSOLIDATES/CITES/ABOUT edges, RuleCommitted, RuleRejected).
Then pruning (eq. 15) makes what is now eligible dormant, with the NEXT contraction of eq. 16, and
both invariants are checked before anything is emitted (Invariant 1 over the sessions whose timeline
the dream changed): a violation raises ``DreamInvariantError`` (the dream step dead-letters nothing
and emits nothing of that dream). Finally the time hierarchy
publishes the periods that changed since the last dream.

The events are applied to the user's memory as they are made, so the next dream (and
the echo filter) sees them; their ids derive from the user, the dream time and the content, so a replay
dreams byte-identical events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from engram.processors.dreaming.checkpoint import Checkpoint
from engram.processors.dreaming.cluster import Idf
from engram.processors.dreaming.config import BALANCED, DreamConfig
from engram.processors.dreaming.consolidate import consolidate
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.prune import check_invariants, prune, restore_edges
from engram.processors.dreaming.report import DreamReport
from engram.processors.dreaming.rows import Episode
from engram.processors.dreaming.schedule import DueDream
from engram.processors.toc import Said, toc_events
from engram.schemas.records import MemoryEvent


class DreamInvariantError(RuntimeError):
    """A dream would break a pruning invariant (seed 000 §5.3.1); nothing of it is emitted."""


def approx_tokens(text: str) -> int:
    """A token estimate when no counter is given: about four characters per cl100k token."""
    return max(1, (len(text) + 3) // 4)


@dataclass
class Dreamer:
    """Runs dreams with one config and token counter; each dream's report goes to ``on_report``
    (metrics in a worker, a list in the bench)."""

    config: DreamConfig = BALANCED
    count: Callable[[str], int] = approx_tokens
    on_report: Callable[[DreamReport], None] = field(default=lambda report: None)

    def dream(self, memory: UserMemory, due: DueDream) -> list[MemoryEvent]:
        """The dream's events, applied to ``memory``; on ``DreamInvariantError`` memory is as it was
        (what a dream may change is saved first: processors/dreaming/checkpoint.py)."""
        saved = Checkpoint.of(memory)
        try:
            events = self._stages(memory, due)
        except Exception:
            saved.restore(memory)
            raise
        finally:
            saved.close(memory)
        memory.emitted(events)
        return events

    def _stages(self, memory: UserMemory, due: DueDream) -> list[MemoryEvent]:
        graph, at_ms, user = memory.graph, due.at_ms, memory.user_id
        consolidation = consolidate(graph, at_ms, self.config, count=self.count)
        pruned = prune(graph, at_ms, self.config, key=user)
        violations = check_invariants(graph, pruned.dormant)
        if violations:
            msg = f"dream of {user} at {at_ms} breaks the pruning invariants: {violations[:5]}"
            raise DreamInvariantError(msg)
        changed = memory.toc.take_changed()
        layer = next(iter(graph.episodes.values())).layer if graph.episodes else "USER"
        timeline = toc_events(memory.toc, changed, at_ms, said=_Said(graph.episodes), idf=Idf.over(graph.frequencies),
                              layer=layer, count=self.count)  # fmt: skip
        memory.toc.published = graph.arrivals  # the episodes placed so far are in what was published
        memory.toc.settle()  # what this dream did not read is frozen
        events = consolidation.events + pruned.events + timeline
        self.on_report(
            DreamReport(
                user,
                at_ms,
                due.trigger,
                len(consolidation.clusters),
                len(graph.committed()),
                consolidation.counts(),
                consolidation.rejections(),
                len(pruned.dormant),
                dict(pruned.held),
                len(changed),
            )
        )
        return events

    def restore(self, memory: UserMemory, node_id: str, at_ms: int) -> list[MemoryEvent]:
        """The NEXT edits that put a node re-awakened elsewhere back into its session's timeline."""
        events = restore_edges(memory.graph, node_id, at_ms, key=memory.user_id)
        memory.emitted(events)
        return events


class _Said(Mapping[str, Said]):
    """What the TOC reads of the user's episodes, looked up, not copied."""

    def __init__(self, episodes: Mapping[str, Episode]) -> None:
        self._episodes = episodes

    def __getitem__(self, node_id: str) -> Said:
        episode = self._episodes[node_id]
        return Said(episode.text, episode.time_ms)

    def __iter__(self) -> Iterator[str]:
        return iter(self._episodes)

    def __len__(self) -> int:
        return len(self._episodes)
