"""The CLIPS rule engine: one environment, loaded once, reused for every batch.

Python only moves facts in (memory-fact, candidate-fact, value-match, prompt-context, clock)
and decisions out (one `collect-decisions` call per run packs the engine-decisions). Every
decision, its rule name and its reason come from the `.clp` files beside this module. The
rules empty the working memory at the end of each run, so no state survives between batches
and no user's facts can meet another user's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Final, Literal, TypeAlias

import clips
from clips._clips import ffi, lib
from clips.common import environment_builder
from clips.values import clips_value

from engram.processors.facts.matching import RelationIndex, select, value_contains, value_similarity
from engram.processors.facts.model import StoredFact

RULE_FILES: Final = ("templates.clp", "policy.clp", "classify.clp", "maintain.clp", "lifecycle.clp", "output.clp")
CALLBACK_RULE_FILE: Final = "similarity_callback.clp"
SimilarityMode: TypeAlias = Literal["callback", "precomputed"]
ANY_RELATION: Final = "ANY"
DECISION_SEPARATOR: Final = "|~|"  # output.clp packs the decisions into one string
DECISION_END: Final = "|#|"
STATIC_TEMPLATES: Final = frozenset(
    {"policy", "relation-policy", "negation-target", "opposite", "durable-category", "initial-fact", "cursor"}
)
"""The facts every run starts and ends with (the policy tables); any other is a batch's."""


class RuleEngineError(RuntimeError):
    """The rule files could not be loaded or a run failed; the message says which."""


@dataclass(frozen=True, slots=True)
class FactPolicy:
    """Thresholds of the paper's production deployment (NeuSymMS IV.E). Times in ms."""

    min_confidence: float = 0.3
    similarity: float = 0.85
    promote_access: int = 3
    ttl_ms: int = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class Decision:
    """One engine-decision as the rules emitted it. ``seq`` is the candidate's position in the
    batch, or -1 for lifecycle decisions."""

    seq: int
    fact_id: str
    action: str
    rule: str
    reason: str
    category: str
    horizon: str
    supersedes: str


@dataclass(frozen=True, slots=True)
class EngineCandidate:
    """A candidate as the engine sees it: normalized value, scope key, deterministic id."""

    seq: int
    fact_id: str
    key: str
    relation: str
    value: str
    confidence: float
    corrects: str = ""  # the id of the active fact this candidate puts right (facts/corrections.py)


_CREATE: Final[dict[type, Callable[[Any, Any], Any]]] = {int: lib.CreateInteger, float: lib.CreateFloat}


@lru_cache(maxsize=4096)
def _symbol(name: str) -> clips.Symbol:
    """A CLIPS symbol, made once per name (relations, horizons, TRUE/FALSE: a few hundred names
    asserted several times a batch)."""
    return clips.Symbol(name)


class RuleEngine:
    """A loaded CLIPS environment. Not thread-safe: one per worker (one per reconciler)."""

    def __init__(self, policy: FactPolicy | None = None, similarity: SimilarityMode = "precomputed") -> None:
        self.policy = policy or FactPolicy()
        self.similarity: SimilarityMode = similarity
        self._env = clips.Environment()
        self._c_env = self._env._env  # clipspy's C environment handle; no public accessor exists
        self._builder = environment_builder(self._c_env, "fact")  # clipspy's own, freed with the env
        self._cell = ffi.new("CLIPSValue *")  # reused: FBPutSlot copies the value
        self._env.define_function(value_similarity, name="value-similarity")
        self._env.define_function(value_contains, name="value-contains")
        files = RULE_FILES + ((CALLBACK_RULE_FILE,) if similarity == "callback" else ())
        for name in files:
            self._load(name)
        self.reset()
        self._collect = self._env.find_function("collect-decisions")
        self.negation_targets = self._read_negation_targets()
        multi = {r for r, card in self._read_cardinality().items() if card == "multi"}
        self.index = RelationIndex(self.negation_targets, frozenset(multi), ANY_RELATION, self._read_opposites())

    def reset(self) -> None:
        """Back to the static policy facts only (deffacts plus the thresholds)."""
        self._env.reset()
        self._assert(
            b"policy",
            (
                (b"min-confidence", float(self.policy.min_confidence)),
                (b"similarity", float(self.policy.similarity)),
                (b"promote-access", int(self.policy.promote_access)),
                (b"ttl-ms", int(self.policy.ttl_ms)),
            ),
        )

    def _load(self, name: str) -> None:
        source = resources.files("engram.processors.facts").joinpath("rules", name)
        with resources.as_file(source) as path:
            try:
                self._env.load(str(path))
            except clips.CLIPSError as exc:
                msg = f"cannot load rule file {name}: {exc}"
                raise RuleEngineError(msg) from exc

    def _read_negation_targets(self) -> dict[str, frozenset[str]]:
        targets: dict[str, set[str]] = {}
        for fact in self._env.find_template("negation-target").facts():
            targets.setdefault(str(fact["negation"]), set()).add(str(fact["target"]))
        return {k: frozenset(v) for k, v in targets.items()}

    def _read_opposites(self) -> dict[str, frozenset[str]]:
        opposites: dict[str, set[str]] = {}
        for fact in self._env.find_template("opposite").facts():
            opposites.setdefault(str(fact["relation"]), set()).add(str(fact["opposite"]))
        return {k: frozenset(v) for k, v in opposites.items()}

    @staticmethod
    def _unpack(packed: str) -> list[Decision]:
        out: list[Decision] = []
        for record in packed.split(DECISION_END)[:-1]:
            seq, fid, action, rule, reason, category, horizon, supersedes = record.split(DECISION_SEPARATOR)
            out.append(Decision(int(seq), fid, action, rule, reason, category, horizon, supersedes))
        return out

    def _read_cardinality(self) -> dict[str, str]:
        return {str(f["relation"]): str(f["cardinality"]) for f in self._env.find_template("relation-policy").facts()}

    def rule_names(self) -> frozenset[str]:
        return frozenset(rule.name for rule in self._env.rules())

    def relation_categories(self) -> dict[str, str]:
        """The relation table of policy.clp (relation -> category)."""
        return {str(f["relation"]): str(f["category"]) for f in self._env.find_template("relation-policy").facts()}

    def is_negation(self, relation: str) -> bool:
        return relation in self.negation_targets

    def interacts(self, candidate_relation: str, fact_relation: str) -> bool:
        """Whether a candidate of this relation is ever judged against a fact of that one."""
        return self.index.interacts(candidate_relation, fact_relation)

    def _assert(self, template: bytes, slots: Sequence[tuple[bytes, object]]) -> None:
        """Assert through the fact builder without clipspy's TemplateFact wrapper.

        The wrapper retains the fact (RetainFact) and releases it when garbage collected; a
        fact retracted by a rule after such a retain/release is never reclaimed, and every
        later run gets slower (measured: 75 -> 2,300 us per 5-fact batch over 10k batches).
        Asserting with the builder directly keeps the cost flat (~3 us per fact). Slot values
        are str (STRING), clips.Symbol (SYMBOL), int, float or a list (multifield)."""
        env, builder, cell = self._c_env, self._builder, self._cell
        lib.FBSetDeftemplate(builder, template)
        for name, value in slots:
            if isinstance(value, clips.Symbol):  # a str subclass: first
                cell.value = lib.CreateSymbol(env, value.encode())
            elif isinstance(value, str):
                cell.value = lib.CreateString(env, value.encode())
            elif (create := _CREATE.get(type(value))) is not None:
                cell.value = create(env, value)
            else:
                cell = clips_value(env, value=value)
            if lib.FBPutSlot(builder, name, cell) != 0:
                lib.FBAbort(builder)
                msg = f"cannot set slot {name!r} of {template!r} to {value!r}"
                raise RuleEngineError(msg)
            cell = self._cell
        if lib.FBAssert(builder) == ffi.NULL:
            msg = f"cannot assert a {template!r} fact"
            raise RuleEngineError(msg)

    def _assert_memory(self, fact: StoredFact, *, lifecycle: bool = False) -> None:
        """A memory-fact; the access count and age only matter to the lifecycle rules."""
        slots: tuple[tuple[bytes, object], ...] = (
            (b"fact-id", fact.fact_id),
            (b"key", fact.key),
            (b"relation", _symbol(fact.relation)),
            (b"value", fact.norm),
            (b"horizon", _symbol(fact.horizon)),
        )
        if lifecycle:
            corrects = _symbol("TRUE" if fact.corrects else "FALSE")
            slots += (
                (b"access-count", fact.access_count),
                (b"recorded-at", fact.recorded_at_ms),
                (b"corrects", corrects),
            )
        self._assert(b"memory-fact", slots)

    def decide(
        self,
        memory: Sequence[StoredFact],
        candidates: Sequence[EngineCandidate],
        context: tuple[str, int, tuple[str, ...]] | None = None,
    ) -> list[Decision]:
        """Run one batch: the user's active facts (the engine asserts only those the candidates
        can meet, see matching.py) and the candidates, in order.

        ``context`` is (intent, turn number, keywords) for the prompt-context template."""
        try:
            self._assert_batch(memory, candidates, context)
        except BaseException:
            self.reset()
            raise
        return self._run()

    def _assert_batch(
        self,
        memory: Sequence[StoredFact],
        candidates: Sequence[EngineCandidate],
        context: tuple[str, int, tuple[str, ...]] | None,
    ) -> None:
        precompute = self.similarity == "precomputed"
        chosen, matches = select(memory, candidates, self.index, self.policy.similarity, precompute=precompute)
        corrections = [(c.seq, c.corrects) for c in candidates if c.corrects]
        if corrections:  # the fact a correction puts right is judged whatever its value says
            missing = {fid for _, fid in corrections} - {f.fact_id for f in chosen}
            chosen += [f for f in memory if f.fact_id in missing]
        for fact in chosen:
            self._assert_memory(fact)
        for cand in candidates:
            self._assert(
                b"candidate-fact",
                (
                    (b"seq", cand.seq),
                    (b"fact-id", cand.fact_id),
                    (b"key", cand.key),
                    (b"relation", _symbol(cand.relation)),
                    (b"value", cand.value),
                    (b"confidence", cand.confidence),
                ),
            )
        for seq, fid in corrections:
            self._assert(b"correction", ((b"seq", seq), (b"fact-id", fid)))
        for m in matches:
            contains = _symbol("TRUE" if m.contains else "FALSE")
            self._assert(
                b"value-match",
                ((b"seq", m.seq), (b"fact-id", m.fact_id), (b"score", m.score), (b"contains", contains)),
            )
        if context is not None:
            intent, turn, keywords = context
            self._assert(
                b"prompt-context",
                ((b"intent", clips.Symbol(intent)), (b"turn-number", turn), (b"keywords", list(keywords))),
            )

    def lifecycle(self, memory: Sequence[StoredFact], *, now_ms: int | None, check_access: bool) -> list[Decision]:
        """Run the lifecycle rules over these facts: promotion by access when ``check_access``,
        pruning when a clock ``now_ms`` is given."""
        try:
            for fact in memory:
                self._assert_memory(fact, lifecycle=True)
            if check_access:
                self._assert(b"lifecycle-check", ((b"kind", clips.Symbol("access")),))
            if now_ms is not None:
                self._assert(b"lifecycle-clock", ((b"now", now_ms),))
        except BaseException:
            self.reset()
            raise
        return self._run()

    def _run(self) -> list[Decision]:
        try:
            self._env.run()
            packed = self._collect()
        except clips.CLIPSError as exc:
            self.reset()
            msg = f"rule engine run failed: {exc}"
            raise RuleEngineError(msg) from exc
        return self._unpack(str(packed))

    def working_memory_size(self) -> int:
        """Facts left after a run besides the static policy (0 when the cleanup rules did their job)."""
        return sum(1 for f in self._env.facts() if f.template.name not in STATIC_TEMPLATES)
