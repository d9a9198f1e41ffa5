"""LoCoMo conversations read from a folder, whichever shape the release used: one flat-keyed
conversation per ``<n>.json`` (the shape ``benchdata/locomo`` ships) or the list-shaped
``locomo10.json`` of newer releases (``benchmarks.locomo_reader.flat_conversations``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engram.benchmarks.locomo_reader import flat_conversations


def locomo_conversations(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """(name, flat conversation) for every conversation in ``folder``'s JSON files, in file-name
    order; files that are not LoCoMo (or not JSON) hold none."""
    out: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.extend(flat_conversations(data, path.stem))
    return out


def locomo_turn_texts(folder: Path) -> list[str]:
    """The text of every turn of every conversation in ``folder``, in order."""
    return [
        str(turn["text"])
        for _, data in locomo_conversations(folder)
        for key, session in data.items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
        if isinstance(turn, dict) and "text" in turn
    ]
