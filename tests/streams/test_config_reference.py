"""The configuration reference is complete, current, and the switches it lists work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engram.processors.embedding import MiniLMEmbedder, StaticEmbedder
from engram.processors.facts.extractor import PatternExtractor
from engram.processors.facts.llm import LLMExtractor
from engram.sinks.embedding_http import HttpEmbedder
from engram.streams.config import ConfigError, EngramConfig
from engram.streams.config_docs import DESCRIPTIONS, reference_markdown
from engram.streams.metrics_docs import metrics_markdown
from engram.streams.stores import fact_extractor, ingest_embedder
from tests.infra.test_production_config import CONTRACT_METRICS

DOCS = Path(__file__).resolve().parents[2] / "docs"
CONFIGURATION = DOCS / "configuration.md"
METRICS = DOCS / "metrics.md"


def test_the_reference_names_exactly_the_variables_a_worker_reads() -> None:
    read: set[str] = set()

    class RecordingEnv(dict[str, str]):
        def get(self, key: str, default: Any = None) -> Any:
            read.add(key)
            return super().get(key, default)

    EngramConfig.from_env(RecordingEnv())
    assert read == set(DESCRIPTIONS)


def test_the_docs_carry_the_current_reference() -> None:
    reference = reference_markdown()
    assert reference in CONFIGURATION.read_text(encoding="utf-8"), "run `engram config` into docs/configuration.md"


def test_the_docs_carry_every_metric_the_worker_exposes() -> None:
    reference = metrics_markdown()
    assert reference in METRICS.read_text(encoding="utf-8"), "run `engram config --metrics` into docs/metrics.md"
    assert all(f"`{name}`" in reference for name in CONTRACT_METRICS)


def test_embedder_and_extractor_are_chosen_by_config() -> None:
    assert isinstance(ingest_embedder(EngramConfig()), StaticEmbedder)
    assert isinstance(ingest_embedder(EngramConfig(embedder="minilm")), MiniLMEmbedder)
    remote = ingest_embedder(EngramConfig.from_env({"ENGRAM_EMBEDDER": "http", "ENGRAM_EMBEDDER_URL": "http://e:8080"}))
    assert isinstance(remote, HttpEmbedder)
    assert isinstance(fact_extractor(EngramConfig()), PatternExtractor)
    llm = fact_extractor(EngramConfig(extractor="llm", extractor_llm_url="http://llm:8000/v1"))
    assert isinstance(llm, LLMExtractor) and llm.model == "gpt-4o-mini"


@pytest.mark.parametrize(
    ("env", "error"),
    [
        ({"ENGRAM_EMBEDDER": "word2vec"}, "unknown embedder"),
        ({"ENGRAM_EXTRACTOR": "regex"}, "unknown extractor"),
        ({"ENGRAM_EMBEDDER": "http"}, "needs ENGRAM_EMBEDDER_URL"),
        ({"ENGRAM_EXTRACTOR": "llm"}, "needs ENGRAM_EXTRACTOR_LLM_URL"),
    ],
)
def test_a_wrong_switch_is_a_clear_error(env: dict[str, str], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        EngramConfig.from_env(env)


def test_compiler_slb_and_trace_presets_are_chosen_by_config() -> None:
    from engram.processors.compiler import FAST
    from engram.processors.slb.config import SLB_LARGE
    from engram.processors.trace import COARSE
    from engram.streams.config import ConfigError

    env = {"ENGRAM_COMPILER_PRESET": "fast", "ENGRAM_SLB_PRESET": "large", "ENGRAM_TRACE_PRESET": "coarse"}
    assert EngramConfig.from_env(env).presets == (FAST, SLB_LARGE, COARSE)
    with pytest.raises(ConfigError, match="unknown SLB preset 'huge'"):
        EngramConfig.from_env({"ENGRAM_SLB_PRESET": "huge"})
