"""Installing the client into a fresh venv pulls in the Kafka client and Avro, and nothing of the
server: no faust, no CLIPS, no tree-sitter, no `engram` package (nor the top-level names it once had)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ALLOWED = {"engram-client", "confluent-kafka", "fastavro", "pip", "setuptools"}
PROBE = """
import importlib.util, json, sys
import engram_client
server = [m for m in ("faust", "clips", "tree_sitter", "engram", "schemas", "streams", "processors", "sinks", "infra")
          if importlib.util.find_spec(m) is not None]
print(json.dumps({"server": server, "loaded": sorted(m.split(".")[0] for m in sys.modules)}))
"""


def _run(*args: str | Path) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, check=False)  # noqa: S603
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_a_fresh_venv_gets_the_client_and_nothing_of_the_server(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    _run(venv / "bin/pip", "install", "--quiet", REPO / "client")
    installed = {row["name"].lower() for row in json.loads(_run(venv / "bin/pip", "list", "--format", "json"))}
    assert installed == ALLOWED, f"unexpected packages: {sorted(installed - ALLOWED)}"
    probe = json.loads(_run(venv / "bin/python", "-I", "-c", PROBE))
    assert probe["server"] == []
    assert "engram_client" in probe["loaded"] and "faust" not in probe["loaded"]
