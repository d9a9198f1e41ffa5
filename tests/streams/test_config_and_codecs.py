"""Worker configuration and per-topic codecs, without servers."""

from __future__ import annotations

import pytest

from engram.schemas.codec import AvroCodec, ConfluentCodec
from engram.streams.codecs import TopicCodecs
from engram.streams.config import ConfigError, EngramConfig
from engram.streams.profile import KAFKA, STANDIN


def test_from_env_round_trips_to_env() -> None:
    config = EngramConfig(
        bootstrap_servers="k:1",
        partitions=3,
        falkordb_host="f",
        falkordb_port=7,
        broker_profile="standin",
        gil_switch_interval_s=0.002,
    )
    rebuilt = EngramConfig.from_env(config.to_env(topic_prefix="t1"))
    assert rebuilt.bootstrap_servers == "k:1" and rebuilt.partitions == 3
    assert rebuilt.gil_switch_interval_s == 0.002 and rebuilt.profile is STANDIN
    assert (rebuilt.falkordb_host, rebuilt.falkordb_port) == ("f", 7)
    assert rebuilt.topics.turns == "t1.engram.turns"


@pytest.mark.parametrize("raw", ["maybe", "2"])
def test_booleans_are_strict(raw: str) -> None:
    with pytest.raises(ConfigError, match="ENGRAM_STANDIN"):
        EngramConfig.from_env({"ENGRAM_STANDIN": raw})


@pytest.mark.parametrize("raw", ["0", "-0.001", "soon"])
def test_switch_interval_must_be_a_positive_number(raw: str) -> None:
    with pytest.raises(ConfigError, match="ENGRAM_GIL_SWITCH_INTERVAL_S"):
        EngramConfig.from_env({"ENGRAM_GIL_SWITCH_INTERVAL_S": raw})


def test_the_compile_time_bound_overrides_the_presets_and_round_trips() -> None:
    default, _, _ = EngramConfig().presets
    assert default.bounds.timeout_ms == 50.0, "unset: the balanced preset's bound"
    config = EngramConfig(compiler_preset="thorough", compile_timeout_ms=900.0)
    compiling, _, _ = EngramConfig.from_env(config.to_env()).presets
    assert compiling.bounds.timeout_ms == 900.0
    assert compiling.bounds.max_nodes_visited == 1000, "the rest of the preset is kept"


@pytest.mark.parametrize("raw", ["0", "-5", "soon"])
def test_the_compile_time_bound_must_be_a_positive_number(raw: str) -> None:
    with pytest.raises(ConfigError, match="ENGRAM_COMPILE_TIMEOUT_MS"):
        EngramConfig.from_env({"ENGRAM_COMPILE_TIMEOUT_MS": raw})


def test_false_means_false() -> None:
    assert EngramConfig.from_env({"ENGRAM_STANDIN": "false"}).profile is KAFKA


def test_broker_profile_is_chosen_by_name() -> None:
    assert EngramConfig.from_env({}).profile is KAFKA
    assert EngramConfig.from_env({"ENGRAM_BROKER_PROFILE": "kafka"}).profile is KAFKA
    assert EngramConfig.from_env({"ENGRAM_BROKER_PROFILE": " Standin "}).profile is STANDIN


def test_engram_standin_is_an_alias_of_the_standin_profile() -> None:
    assert EngramConfig.from_env({"ENGRAM_STANDIN": "true"}).broker_profile == "standin"
    # The explicit name wins over the older flag (a worker inherits its parent's environment).
    explicit = {"ENGRAM_BROKER_PROFILE": "kafka", "ENGRAM_STANDIN": "true"}
    assert EngramConfig.from_env(explicit).broker_profile == "kafka"


def test_unknown_broker_profile_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"ENGRAM_BROKER_PROFILE='redpanda'.*\['kafka', 'standin'\]"):
        EngramConfig.from_env({"ENGRAM_BROKER_PROFILE": "redpanda"})
    with pytest.raises(ConfigError, match="unknown broker profile 'tansu'"):
        EngramConfig(broker_profile="tansu")


def test_every_topic_uses_the_registry_when_configured() -> None:
    plain = TopicCodecs.for_config(EngramConfig())
    assert all(isinstance(c, AvroCodec) for c in vars(plain).values())
    registry = TopicCodecs.for_config(EngramConfig(schema_registry_url="mock://engram-config-test"))
    assert all(isinstance(c, ConfluentCodec) for c in vars(registry).values())
