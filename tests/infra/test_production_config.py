"""docker-compose.yml, Prometheus and Grafana provisioning agree with the code (no Docker needed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any, Final

import yaml

from engram.streams.config import EngramConfig
from engram.streams.metrics import EngramMetrics

REPO: Final = Path(__file__).resolve().parents[2]
# The metric names of the shared contract (COMMON.md), as Prometheus exposes them.
CONTRACT_METRICS: Final = frozenset(
    {
        "engram_ingest_messages_total",
        "engram_commit_stage_seconds_total",
        "engram_deadletter_messages_total",
        "engram_eventlog_records_total",
        "engram_eventlog_bytes_total",
        "engram_eventlog_flush_seconds",
        "engram_memory_events_total",
        "engram_sink_applied_total",
        "engram_sink_batch_seconds",
        "engram_sink_retries_total",
        "engram_context_requests_total",
        "engram_compile_seconds",
        "engram_slb_lookups_total",
        "engram_facts_decisions_total",
        "engram_code_entities_total",
        "engram_offset_gaps_total",
        "engram_view_followed_total",
        "engram_view_followed_partitions",
        "engram_dreams_total",
        "engram_dreams_failed_total",
        "engram_dream_nodes_total",
        "engram_dream_rejections_total",
        "engram_dormant_nodes_total",
        "engram_consumer_lag",
        "engram_agent_last_batch_size",
        "engram_worker_ready",
        "engram_authorization_denials_total",
        "engram_context_budget_use",
        "engram_eventlog_segments_total",
        "engram_erasures_total",
        "engram_stage_cpu_seconds_total",
        "engram_gc_cpu_seconds_total",
    }
)
HISTOGRAM_SUFFIXES: Final = ("_bucket", "_sum", "_count")


def load_yaml(relative: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / relative).read_text())
    return data


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "engram/infra/grafana/dashboards/engram.json").read_text())
    return data


def dashboard_metrics() -> set[str]:
    """Metric names in the dashboard's queries, with histogram sample suffixes removed."""
    names = set()
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            for name in re.findall(r"\bengram_[a-z0-9_]+", target["expr"]):
                for suffix in HISTOGRAM_SUFFIXES:
                    if name.endswith(suffix) and name.removesuffix(suffix) in CONTRACT_METRICS:
                        name = name.removesuffix(suffix)
                names.add(name)
    return names


def exposed_metrics() -> set[str]:
    """Names the worker's registry exposes: counters with `_total`, histograms by family name."""
    names = set()
    for family in EngramMetrics().registry.collect():
        names.add(f"{family.name}_total" if family.type == "counter" else family.name)
    return names


def test_every_compose_service_has_a_healthcheck_and_declared_volumes() -> None:
    compose = load_yaml("docker-compose.yml")
    services: dict[str, Any] = compose["services"]
    assert set(services) == {
        "kafka", "kafka-tenants", "schema-registry", "qdrant", "neo4j", "worker", "prometheus", "grafana",
    }  # fmt: skip
    declared = set(compose["volumes"])
    for name, service in services.items():
        test = service.get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), f"{name} has no healthcheck command"
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (REPO / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in declared, f"{name} uses undeclared volume {source}"
        for dependency in service.get("depends_on", []):
            assert dependency in services, f"{name} depends on unknown service {dependency}"


def test_worker_service_is_configured_through_the_variables_engram_reads() -> None:
    worker = load_yaml("docker-compose.yml")["services"]["worker"]
    assert worker["command"] == ["engram", "worker"]
    assert (REPO / worker["build"]["context"] / worker["build"]["dockerfile"]).is_file()
    env: dict[str, str] = {key: str(value) for key, value in worker["environment"].items()}

    read: set[str] = set()

    class RecordingEnv(dict[str, str]):
        def get(self, key: str, default: Any = None) -> Any:
            read.add(key)
            return super().get(key, default)

    config = EngramConfig.from_env(RecordingEnv(env))
    assert set(env) <= read, f"compose sets variables Engram never reads: {sorted(set(env) - read)}"
    assert config.bootstrap_servers == "kafka:9092"
    assert config.schema_registry_url == "http://schema-registry:8081"
    assert config.neo4j_uri == "bolt://neo4j:7687" and config.qdrant_url == "http://qdrant:6333"
    # Inside the container the worker must listen on all interfaces for Prometheus to scrape it.
    assert config.web_host == env["ENGRAM_WEB_HOST"] == "0.0.0.0"  # noqa: S104 -- asserting the compose value
    assert (config.web_port, config.broker_profile) == (6066, "kafka")


def test_prometheus_scrapes_the_worker_metrics_port() -> None:
    jobs = {job["job_name"]: job for job in load_yaml("engram/infra/prometheus/prometheus.yml")["scrape_configs"]}
    worker = jobs["engram-worker"]
    assert worker["metrics_path"] == "/metrics"
    assert worker["static_configs"][0]["targets"] == ["worker:6066"]


def test_dashboard_queries_only_contract_metrics_and_covers_them() -> None:
    used = dashboard_metrics()
    assert used <= CONTRACT_METRICS, f"unknown metrics in the dashboard: {sorted(used - CONTRACT_METRICS)}"
    assert used == CONTRACT_METRICS, f"contract metrics without a panel: {sorted(CONTRACT_METRICS - used)}"
    missing = CONTRACT_METRICS - exposed_metrics()
    assert not missing, f"the worker's registry does not expose {sorted(missing)}"


def test_dashboard_uses_the_provisioned_datasource_and_path() -> None:
    sources = load_yaml("engram/infra/grafana/provisioning/datasources/prometheus.yml")["datasources"]
    uids = {source["uid"] for source in sources}
    for panel in dashboard()["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] in uids, panel["title"]
            assert panel["targets"], panel["title"]
    provider = load_yaml("engram/infra/grafana/provisioning/dashboards/engram.yml")["providers"][0]
    grafana = load_yaml("docker-compose.yml")["services"]["grafana"]
    assert f"./engram/infra/grafana/dashboards:{provider['options']['path']}:ro" in grafana["volumes"]


def test_neo4j_gets_only_variables_its_entrypoint_accepts() -> None:
    """The image turns every NEO4J_* variable but NEO4J_AUTH (and a few of its own) into a setting
    (NEO4J_server_memory_heap_max__size -> server.memory.heap.max_size), and Neo4j 5's strict
    validation refuses an unknown setting: a NEO4J_PASSWORD stopped the server, and the worker
    waiting on it never started."""
    neo4j = load_yaml("docker-compose.yml")["services"]["neo4j"]
    for name in neo4j["environment"]:
        if name == "NEO4J_AUTH":
            continue
        section = name.removeprefix("NEO4J_").split("_", 1)[0]
        assert section in {"server", "dbms", "db", "initial"}, f"{name} is not a Neo4j setting"
    assert "NEO4J_AUTH" in " ".join(neo4j["healthcheck"]["test"])


def test_the_worker_is_healthy_when_ready() -> None:
    worker = load_yaml("docker-compose.yml")["services"]["worker"]
    assert "/ready" in " ".join(worker["healthcheck"]["test"])


def test_alert_rules_are_loaded_and_query_metrics_the_worker_exposes() -> None:
    assert "/etc/prometheus/alerts.yml" in load_yaml("engram/infra/prometheus/prometheus.yml")["rule_files"]
    volumes = load_yaml("docker-compose.yml")["services"]["prometheus"]["volumes"]
    assert "./engram/infra/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in volumes
    rules = load_yaml("engram/infra/prometheus/alerts.yml")["groups"][0]["rules"]
    assert {rule["alert"] for rule in rules} == {
        "EngramConsumerLagGrowing", "EngramDeadLetters", "EngramSinkRetries", "EngramWorkerNotReady",
    }  # fmt: skip
    exposed = exposed_metrics()
    for rule in rules:
        used = set(re.findall(r"\bengram_[a-z0-9_]+", rule["expr"]))
        assert used and used <= exposed, f"{rule['alert']} queries {sorted(used - exposed)}"


def test_tenants_may_read_only_their_own_answer_topics() -> None:
    """infra/kafka/tenants.sh (compose's kafka-tenants), dry run: each tenant reads its own
    organization's answer topics and nothing else; it writes only the input topics."""
    env = {**os.environ, "TENANTS": "acme:pw-1 globex:pw-2", "DRY_RUN": "1"}
    script = REPO / "engram" / "infra" / "kafka" / "tenants.sh"
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=True).stdout  # noqa: S603, S607
    acls = [line.split() for line in out.splitlines() if "kafka-acls.sh" in line]
    for tenant, other in (("acme", "globex"), ("globex", "acme")):
        mine = [a for a in acls if f"User:{tenant}" in a]
        reads = {a[a.index("--topic") + 1] for a in mine if "Read" in a and "--topic" in a}
        assert reads == {f"engram.context.compiled.org.{tenant}", f"engram.graph.answers.org.{tenant}"}
        writes = {a[a.index("--topic") + 1] for a in mine if "Write" in a}
        assert writes == {"engram.turns", "engram.code", "engram.context.requests", "engram.graph.requests"}
        assert not any(other in " ".join(a) for a in mine)
    kafka = load_yaml("docker-compose.yml")["services"]["kafka"]["environment"]
    assert kafka["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert "EXTERNAL:SASL_PLAINTEXT" in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    bad = subprocess.run(["bash", str(script)], env={**env, "TENANTS": "Acme;rm:x"}, capture_output=True, text=True)  # noqa: S603, S607
    assert bad.returncode == 2 and "bad TENANTS entry" in bad.stderr
