#!/usr/bin/env bash
# Import LoCoMo conversations as turns with `engram import locomo`: each dialogue turn becomes a
# ConversationTurn (user = the conversation, one session per LoCoMo session), checked as a worker
# admits it, then published to engram.turns, where a running worker ingests it.
#
#   examples/import_locomo.sh LOCOMO_FOLDER [CONVERSATION]
#
# LOCOMO_FOLDER holds the conversation files (26.json, 30.json, ... or locomo10.json); CONVERSATION
# (e.g. 30) imports that one file only, else every conversation in the folder. The broker and
# topics come from ENGRAM_BOOTSTRAP_SERVERS / ENGRAM_TOPIC_PREFIX, else from the stack `engram up`
# recorded in $ENGRAM_DATA_DIR/stack.json (.engram/stack.json). ENGRAM_CLI names the command
# (default: engram on PATH, e.g. .venv/bin after `make install`).
set -euo pipefail

folder=${1:?usage: examples/import_locomo.sh LOCOMO_FOLDER [CONVERSATION]}
conversation=${2:-}
engram=${ENGRAM_CLI:-engram}

source=$folder
if [[ -n $conversation ]]; then
    source=$folder/$conversation.json
fi
if [[ ! -e $source ]]; then
    echo "import_locomo: no such file or folder: $source" >&2
    exit 2
fi

# A dry run first: every turn checked, nothing published (exit 1 names the lines a worker would refuse).
"$engram" import locomo "$source" --dry-run
# Then publish; the summary (valid, refused, delivered, topic) as one JSON line.
"$engram" import locomo "$source" --json
