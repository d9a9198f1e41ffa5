"""FalkorDB graphs for the sink tests: an executor on the stand-in, and per-test graphs dropped after."""

from __future__ import annotations

from collections.abc import Iterator

from engram.infra.config import StackInfo
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor


def falkor_executor(stack: StackInfo, graph: str, max_rows: int = 50) -> FalkorExecutor:
    host, port = stack.require_falkordb()
    executor = FalkorExecutor(FalkorConfig(host=host, port=port, graph=graph, max_rows=max_rows))
    executor.setup()
    return executor


def dropped_graphs(stack: StackInfo, unique_name: str, count: int) -> Iterator[list[str]]:
    """``count`` graph names for one test (a fixture body); each graph is dropped afterwards."""
    names = [f"{unique_name}-{i}" for i in range(count)]
    yield names
    for name in names:
        executor = falkor_executor(stack, name)
        executor.delete_graph()
        executor.close()
