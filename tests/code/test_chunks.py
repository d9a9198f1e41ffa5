"""Split-then-merge chunks: AST boundaries, a token budget, and breadcrumbs."""

from __future__ import annotations

from engram.processors.code.chunks import Chunk, ChunkingConfig, chunk_file
from engram.processors.code.extract import extract_with_tree
from tests.code.support import POLYMORPHIC, WhitespaceCounter

BIG = "\n".join(
    [
        "import os",
        "",
        "class Service(Base, Mixin):",
        *[
            f"    def step_{i}(self, x: int) -> int:\n"
            f"        y = helper_{i}(x)\n"
            f"        return self.other_{i}(y) + {i}\n"
            for i in range(12)
        ],
        "def tail() -> None:",
        "    os.remove('x')",
        "",
    ]
)


def chunks_of(text: str, path: str = "svc/service.py", budget: int = 40) -> list[Chunk]:
    symbols, tree = extract_with_tree(path, text)
    return chunk_file(symbols, tree, text.encode(), WhitespaceCounter(), ChunkingConfig(max_tokens=budget))


def test_small_siblings_merge_up_to_the_budget() -> None:
    counter = WhitespaceCounter()
    chunks = chunks_of(BIG)
    methods = [c for c in chunks if c.parent_class]
    assert 3 <= len(methods) < 12  # twelve methods, merged a few per chunk
    assert all(counter.count(c.code) <= 40 for c in chunks)
    assert any(len([m for m in c.members if ".step_" in m]) >= 2 for c in chunks)


def test_chunks_are_ordered_disjoint_and_cover_every_definition() -> None:
    chunks = chunks_of(BIG)
    spans = [(c.start_line, c.end_line) for c in chunks]
    assert spans == sorted(spans)
    assert all(a[1] < b[0] or (a[1] == b[0]) for a, b in zip(spans, spans[1:], strict=False))
    lines = BIG.splitlines()
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("def "):
            assert any(c.start_line <= number <= c.end_line for c in chunks), line


def test_breadcrumbs_name_file_class_bases_signature_and_calls() -> None:
    chunks = chunks_of(BIG)
    step3 = next(c for c in chunks if "svc.service.Service.step_3" in c.members)
    assert step3.parent_class == "svc.service.Service"
    assert step3.bases == ("Base", "Mixin")
    assert {"helper_3", "self.other_3"} <= set(step3.calls)
    tail = next(c for c in chunks if "svc.service.tail" in c.members)
    assert tail.parent_class == "" and tail.calls == ("os.remove",)
    crumb = step3.breadcrumb("svc/service.py")
    assert crumb.startswith("# file: svc/service.py:") and "# class: svc.service.Service(Base, Mixin)" in crumb


def test_a_method_over_budget_is_split_inside_and_keeps_its_signature() -> None:
    body = "\n".join(f"        total += compute_{i}(value, {i})" for i in range(30))
    text = f"class Big:\n    def crunch(self, value: int) -> int:\n        total = 0\n{body}\n        return total\n"
    chunks = chunks_of(text, "svc/big.py", budget=30)
    inner = [c for c in chunks if c.scope == "svc.big.Big.crunch"]
    assert len(inner) >= 3
    assert all(c.signature == "def crunch(self, value: int) -> int:" and c.parent_class == "svc.big.Big" for c in inner)


def test_a_small_file_is_one_chunk() -> None:
    text = (POLYMORPHIC / "fraud" / "service.py").read_text("utf-8")
    chunks = chunks_of(text, "fraud/service.py", budget=400)
    assert len(chunks) == 1 and chunks[0].scope == "fraud.service"
