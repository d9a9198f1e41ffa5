"""Schema evolution check: data written with an older contract must still be read by the current one.

For every ``engram/schemas/avro/*.avsc``, the older writers checked are the same file on a git revision
(``--against``, default ``HEAD~1``: the previous commit of main) and the recorded versions under
``engram/schemas/avro/history/`` (what the codec resolves old data with). For each older writer, records
that cover every field, every union branch and every enum symbol are written with it and read with
the current schema as reader (Avro schema resolution, fastavro). Any failure is a backward
incompatibility and the exit code is 1. A revision that git cannot show (a new file, or a shallow
clone without the parent) is said so on a line of its own, never skipped quietly; the history
checks still run.

    python -m tools.check_schemas [--against REV]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from itertools import cycle, islice
from pathlib import Path
from typing import Any

import fastavro
from fastavro.schema import parse_schema

ROOT = Path(__file__).resolve().parents[1]
AVRO = ROOT / "engram" / "schemas" / "avro"
FORMER_AVRO = Path("schemas") / "avro"
"""Where the contracts lived before the server's rooms moved into the ``engram`` package: an older
revision is read there when it has no ``engram/schemas/avro``."""
PRIMITIVES: dict[str, list[Any]] = {
    "null": [None], "boolean": [False, True], "int": [0, 7], "long": [0, 2**40], "float": [0.5],
    "double": [0.25], "string": ["", "x"], "bytes": [b"", b"x"],
}  # fmt: skip


def candidates(schema: Any, named: dict[str, Any]) -> list[Any]:
    """Values of ``schema`` that together use every branch, symbol and field."""
    if isinstance(schema, list):
        return [value for branch in schema for value in candidates(branch, named)]
    if isinstance(schema, str):
        return PRIMITIVES[schema] if schema in PRIMITIVES else candidates(named[schema], named)
    kind = schema["type"]
    if kind in PRIMITIVES:
        return PRIMITIVES[kind]
    if "name" in schema:
        named[schema["name"]] = schema
    if kind == "enum":
        return list(schema["symbols"])
    if kind == "array":
        return [[], *([[value] for value in candidates(schema["items"], named)][:3])]
    if kind == "map":
        return [{}, *([{"k": value} for value in candidates(schema["values"], named)][:3])]
    if kind == "fixed":
        return [b"\x00" * schema["size"]]
    return records(schema, named)


def records(schema: dict[str, Any], named: dict[str, Any]) -> list[dict[str, Any]]:
    fields = [(field["name"], candidates(field["type"], named)) for field in schema["fields"]]
    width = max((len(values) for _, values in fields), default=1)
    columns = {name: list(islice(cycle(values), width)) for name, values in fields}
    return [{name: column[i] for name, column in columns.items()} for i in range(width)]


def incompatibilities(old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
    writer, reader = parse_schema(old), parse_schema(new)
    for record in candidates(writer, {}):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, writer, record)
        buf.seek(0)
        try:
            fastavro.schemaless_reader(buf, writer, reader)
        except Exception as exc:  # any failure to resolve is the incompatibility reported
            yield f"{type(exc).__name__}: {exc}"
            return


def at_revision(path: Path, revision: str) -> dict[str, Any] | None:
    git = shutil.which("git")
    if git is None:
        return None
    for relative in (path.relative_to(ROOT), FORMER_AVRO / path.name):
        shown = subprocess.run(  # noqa: S603 - git with fixed arguments
            [git, "show", f"{revision}:{relative}"], cwd=ROOT, capture_output=True, text=True, check=False
        )  # fmt: skip
        if shown.returncode == 0:
            return dict(json.loads(shown.stdout))
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="HEAD~1", help="git revision whose schemas must stay readable")
    args = parser.parse_args(argv)
    failures = 0
    for current_path in sorted(AVRO.glob("*.avsc")):
        current = json.loads(current_path.read_text(encoding="utf-8"))
        older = {f"history/{p.name}": json.loads(p.read_text(encoding="utf-8"))
                 for p in sorted((AVRO / "history").glob(f"{current_path.stem}.v*.avsc"))}  # fmt: skip
        previous = at_revision(current_path, args.against)
        if previous is None:
            print(f"{current_path.name}: not on {args.against} (new, or the revision is not in this clone)")
        elif previous != current:
            older[args.against] = previous
        for source, old in older.items():
            for problem in incompatibilities(old, current):
                failures += 1
                print(f"{current_path.name}: data written with {source} cannot be read: {problem}")
        print(f"{current_path.name}: {len(older)} older writer(s) read by the current schema")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
