"""The server's wheel installs one top-level package, ``engram``, with its package data, so an agent
app's own ``schemas`` or ``streams`` module and Engram's rooms can live in one environment."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import schemas, streams
import engram
from engram.schemas.codec import schema_json
from engram.streams.cli import main
print(json.dumps({"app": [schemas.APP, streams.APP], "engram": engram.__file__,
                  "turn": schema_json("ConversationTurn")["name"], "cli": main.__module__}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(  # noqa: S603 - pip with fixed arguments
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, f"building the wheel failed:\n{built.stdout}\n{built.stderr}"
    (path,) = out.glob("engram-*.whl")
    return path


def test_the_wheel_holds_one_top_level_package_and_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"engram", "engram-0.1.0.dist-info"}
    for data in ("engram/schemas/avro/ConversationTurn.avsc", "engram/processors/facts/rules/lifecycle.clp",
                 "engram/processors/embedding/static_minilm_l6.npz", "engram/streams/facts.html",
                 "engram/benchmarks/data/facts/utterances.jsonl", "engram/infra/prometheus/alerts.yml"):  # fmt: skip
        assert data in names, f"{data} is missing from the wheel"
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    assert "engram = engram.streams.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_an_apps_own_schemas_and_streams_modules_live_beside_engram(wheel: Path, tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "schemas").mkdir(parents=True)
    (app / "schemas" / "__init__.py").write_text("APP = 'schemas'\n")
    (app / "streams.py").write_text("APP = 'streams'\n")
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed probe
        [sys.executable, "-c", PROBE, str(app), str(wheel)], capture_output=True, text=True, timeout=120, check=False
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["app"] == ["schemas", "streams"]
    assert probe["engram"].startswith(str(wheel)), "engram was imported from somewhere other than the wheel"
    assert probe["turn"] == "ConversationTurn" and probe["cli"] == "engram.streams.cli"
