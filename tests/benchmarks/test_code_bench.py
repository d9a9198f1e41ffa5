"""``engram bench code`` runs end to end on a small tree (a smoke test: no timing is asserted)."""

from __future__ import annotations

import argparse

from engram.benchmarks import code as bench
from tests.code.support import POLYMORPHIC


def test_bench_reports_the_promised_fields() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--repo", str(POLYMORPHIC), "--edits", "2", "--counter", "words"])
    result = bench.run(args)
    for key in ("files", "loc", "loc_per_s", "entities", "edges", "seconds", "incremental_ms", "agreement_with_ast"):
        assert key in result, key
    assert result["files"] == 11  # every .py file, the package __init__ files included
    assert result["nodes_by_kind"]["code_method"] == 17
    assert result["agreement_with_ast"] == 1.0 and result["agreement_items"] > 30
    assert result["incremental_ms"] is not None and result["incremental_ms"] > 0
