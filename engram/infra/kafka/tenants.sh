#!/usr/bin/env bash
# Tenants' Kafka credentials and ACLs (issue 17, private delivery): run once by compose's
# kafka-tenants service, against the broker's internal listener, after the broker is healthy.
#
#   TENANTS="acme:secret-1 globex:secret-2"   (tenant id : SCRAM-SHA-512 password)
#
# Each tenant gets a SCRAM user named after it and ACLs that let it:
#   - write turns, code changes, context and graph requests (the workers check each record's
#     token; Kafka only checks who connects);
#   - read ONLY its organization's answer topics, engram.context.compiled.org.<tenant> and
#     engram.graph.answers.org.<tenant> (created here, so the tenant needs no CREATE right), with
#     any consumer group named engram-client-*;
# and nothing else: no other tenant's topic, no engram.memory, no relationships, no dead letters.
# The worker is the super user on the internal listener (a network only the stack's services join).
# DRY_RUN=1 prints the commands instead of running them (tests/infra checks them).
set -euo pipefail

BOOTSTRAP="${BOOTSTRAP:-kafka:9092}"
BIN="${KAFKA_BIN:-/opt/kafka/bin}"
PARTITIONS="${PARTITIONS:-4}"
INPUTS="engram.turns engram.code engram.context.requests engram.graph.requests"
ANSWERS="engram.context.compiled engram.graph.answers"

run() {
  if [[ "${DRY_RUN:-0}" == "1" ]]; then echo "$*"; else "$@"; fi
}

for entry in ${TENANTS:-}; do
  tenant="${entry%%:*}"
  password="${entry#*:}"
  if [[ ! "$tenant" =~ ^[a-z0-9][a-z0-9.-]{0,62}$ || "$password" == "$entry" || -z "$password" ]]; then
    echo "tenants.sh: bad TENANTS entry for tenant '${tenant}' (want id:password, id of a-z0-9.-)" >&2
    exit 2
  fi
  run "$BIN/kafka-configs.sh" --bootstrap-server "$BOOTSTRAP" --alter --entity-type users --entity-name "$tenant" \
    --add-config "SCRAM-SHA-512=[password=${password}]"
  for topic in $INPUTS; do
    run "$BIN/kafka-acls.sh" --bootstrap-server "$BOOTSTRAP" --add --allow-principal "User:${tenant}" \
      --operation Write --operation Describe --topic "$topic"
  done
  for answers in $ANSWERS; do
    run "$BIN/kafka-topics.sh" --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
      --topic "${answers}.org.${tenant}" --partitions "$PARTITIONS" --replication-factor 1
    run "$BIN/kafka-acls.sh" --bootstrap-server "$BOOTSTRAP" --add --allow-principal "User:${tenant}" \
      --operation Read --operation Describe --topic "${answers}.org.${tenant}"
  done
  run "$BIN/kafka-acls.sh" --bootstrap-server "$BOOTSTRAP" --add --allow-principal "User:${tenant}" \
    --operation Read --group engram-client- --resource-pattern-type prefixed
done
if [[ "${DRY_RUN:-0}" != "1" ]]; then touch /tmp/tenants-done; fi
