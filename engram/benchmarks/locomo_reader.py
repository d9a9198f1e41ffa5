"""LoCoMo conversations as ConversationTurns (pure: takes the parsed JSON object, reads no file).

Format (see benchdata/locomo/PROVENANCE.md): ``speaker_a``, ``speaker_b``, ``session_N`` (a list of
``{speaker, dia_id, text, [img_url, blip_caption, query]}``) and ``session_N_date_time``
(``"1:56 pm on 8 May, 2023"``). Date keys past the last real session are ignored. Newer releases
put the same content in one list-shaped file (``flat_conversations`` reads both).

Mapping:
- ``user_id`` = the conversation id (e.g. the file stem), ``session_id`` = ``f"{conv}:session_{N}"``;
- ``turn_id`` = ``f"{conv}:{dia_id}"``; ``turn_index`` = position in the session (0-based);
- role: speaker_a -> ``user``, speaker_b -> ``assistant``;
- ``event_time_ms`` = the session's date-time (read as UTC) + ``turn_index`` seconds, so time is
  strictly increasing inside a session;
- metadata keeps ``dia_id`` and ``speaker``, and ``blip_caption`` when the turn shared an image.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from engram.schemas.records import ConversationTurn

SESSION_KEY: Final = re.compile(r"^session_(\d+)$")
DATE_FORMAT: Final = "%I:%M %p on %d %B, %Y"
TURN_SPACING_MS: Final = 1000


class LocomoFormatError(ValueError):
    """The object is not a LoCoMo conversation in the expected format."""


def session_time_ms(text: str) -> int:
    """``"1:56 pm on 8 May, 2023"`` as epoch milliseconds, read as UTC."""
    try:
        parsed = datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError as exc:
        msg = f"unparseable LoCoMo session date {text!r}"
        raise LocomoFormatError(msg) from exc
    return int(parsed.timestamp() * 1000)


def flat_conversations(data: Any, name: str) -> list[tuple[str, dict[str, Any]]]:
    """The conversations in one parsed LoCoMo file, each with flat keys (``speaker_a``,
    ``session_N``, ``qa``...) and a name: a file of one flat conversation (``26.json``) is itself,
    named ``name``; the list-shaped release file (``locomo10.json``: ``[{sample_id, conversation:
    {speaker_a, session_N...}, qa...}]``) gives one per element, named by its ``sample_id``. Anything
    else holds none."""
    if isinstance(data, Mapping):
        return [(name, dict(data))] if "qa" in data and "session_1" in data else []
    if not isinstance(data, list):
        return []
    out: list[tuple[str, dict[str, Any]]] = []
    for index, sample in enumerate(data):
        conversation = sample.get("conversation") if isinstance(sample, Mapping) else None
        if isinstance(conversation, Mapping) and "session_1" in conversation:
            flat = {**conversation, "qa": sample.get("qa", [])}
            out.append((str(sample.get("sample_id", f"{name}-{index}")), flat))
    return out


def session_numbers(data: Mapping[str, Any]) -> list[int]:
    """Numbers of the sessions that have turns, ascending."""
    numbers = []
    for key, value in data.items():
        m = SESSION_KEY.match(key)
        if m and isinstance(value, list):
            numbers.append(int(m.group(1)))
    return sorted(numbers)


def conversation_turns(
    data: Mapping[str, Any], conversation_id: str, *, caption_in_content: bool = False
) -> list[ConversationTurn]:
    """All turns of one conversation, session by session, in dialogue order.

    ``caption_in_content`` appends an image's BLIP caption to the text (``[image: ...]``).
    """
    try:
        speaker_a = str(data["speaker_a"])
    except KeyError as exc:
        msg = f"conversation {conversation_id!r} has no speaker_a"
        raise LocomoFormatError(msg) from exc
    turns: list[ConversationTurn] = []
    for n in session_numbers(data):
        date_key = f"session_{n}_date_time"
        if date_key not in data:
            msg = f"conversation {conversation_id!r} session {n} has no {date_key}"
            raise LocomoFormatError(msg)
        start_ms = session_time_ms(str(data[date_key]))
        session_id = f"{conversation_id}:session_{n}"
        for index, raw in enumerate(data[f"session_{n}"]):
            turns.append(_turn(raw, conversation_id, session_id, index, start_ms, speaker_a, caption_in_content))
    return turns


def _turn(
    raw: Mapping[str, Any],
    conversation_id: str,
    session_id: str,
    index: int,
    start_ms: int,
    speaker_a: str,
    caption_in_content: bool,
) -> ConversationTurn:
    dia_id = str(raw["dia_id"])
    speaker = str(raw["speaker"])
    text = str(raw.get("text", ""))
    metadata = {"dia_id": dia_id, "speaker": speaker}
    caption = raw.get("blip_caption")
    if caption:
        metadata["blip_caption"] = str(caption)
        if caption_in_content:
            text = f"{text} [image: {caption}]"
    return {
        "turn_id": f"{conversation_id}:{dia_id}",
        "user_id": conversation_id,
        "agent_id": None,
        "flow_id": None,
        "session_id": session_id,
        "turn_index": index,
        "role": "user" if speaker == speaker_a else "assistant",
        "content": text,
        "event_time_ms": start_ms + index * TURN_SPACING_MS,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": metadata,
    }


def evidence_ids(raw: object) -> list[str]:
    """Normalized dia_ids of a QA item's ``evidence`` (splits ``;``/whitespace, fixes ``D:11:26``, ``D30:05``)."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return out
