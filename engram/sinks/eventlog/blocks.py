"""Counting records in an OCF segment from its block headers, without reading the blocks.

An Object Container File is: ``Obj\\x01``, a metadata map, a 16-byte sync marker, then blocks of
(record count, byte size, bytes, sync marker), each count and size an Avro zigzag varint.
"""

from __future__ import annotations

import os
from typing import BinaryIO, Final

from engram.sinks.eventlog.layout import EventLogCorruptError

MAGIC: Final = b"Obj\x01"
SYNC_SIZE: Final = 16


def _read_long(handle: BinaryIO) -> int | None:
    """One zigzag varint, or None at a clean end of file."""
    shift = 0
    value = 0
    while True:
        byte = handle.read(1)
        if not byte:
            if shift == 0:
                return None
            msg = "segment ends inside a varint"
            raise EventLogCorruptError(msg)
        value |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (value >> 1) ^ -(value & 1)
        shift += 7


def _require_long(handle: BinaryIO) -> int:
    value = _read_long(handle)
    if value is None:
        msg = "segment ends inside its header or a block header"
        raise EventLogCorruptError(msg)
    return value


def _skip_header(handle: BinaryIO) -> None:
    if handle.read(len(MAGIC)) != MAGIC:
        msg = "not an Avro object container file"
        raise EventLogCorruptError(msg)
    while (entries := _require_long(handle)) != 0:
        if entries < 0:  # a negative count is followed by the block's byte size
            _require_long(handle)
            entries = -entries
        for _ in range(2 * entries):  # key and value, each length-prefixed bytes
            handle.seek(_require_long(handle), os.SEEK_CUR)
    handle.seek(SYNC_SIZE, os.SEEK_CUR)


def count_records(handle: BinaryIO, limit: int | None = None) -> int:
    """Records in the segment's blocks that end within the first ``limit`` bytes (all if None)."""
    _skip_header(handle)
    total = 0
    while True:
        count = _read_long(handle)
        if count is None:
            return total
        size = _require_long(handle)
        end = handle.tell() + size + SYNC_SIZE
        if limit is not None and end > limit:
            return total
        handle.seek(end)
        total += count
