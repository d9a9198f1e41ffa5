"""Any text, in any supported language, parses into a graph without errors (tree-sitter recovers)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.code.builder import CodeGraphBuilder
from engram.processors.code.graph import CodeGraph
from tests.code.support import WhitespaceCounter, change, ref

FRAGMENTS = [
    "class A(B):\n",
    "    def f(self, x):\n",
    "        return self.g(x)\n",
    "def g(y): return h(y)\n",
    "import os.path as p\n",
    "from . import q\n",
    "x = A()\n",
    "x.f(1)\n",
    "(((\n",
    "}\n",
    "class { function ( => \n",
    "    \n",
    "é ünïcode = '字'\n",
]


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=25),
    path=st.sampled_from(["m/a.py", "m/a.js", "m/a.ts", "m/a.tsx", "m/A.java", "m/a.go"]),
)
def test_any_text_builds_a_consistent_graph(parts: list[str], path: str) -> None:
    builder = CodeGraphBuilder(WhitespaceCounter())
    graph = CodeGraph()
    text = "".join(parts)
    graph.apply_all(builder.apply(change(path, text), ref(0)))
    graph.apply_all(builder.apply(change(path, text + "\ndef tail(): pass\n"), ref(1)))
    graph.apply_all(builder.apply(change(path, "", deleted=True), ref(2)))
    assert graph.nodes_by_id == {}  # deleting the only file leaves nothing behind, unresolved nodes included
    assert graph.edge_count() == 0
