"""Python: module names from paths, imports (absolute and relative), and the query captures."""

from __future__ import annotations

import tree_sitter as ts

from engram.processors.code.languages import grammar
from engram.processors.code.model import ImportBinding
from engram.processors.code.scopes import Captured, RawCall, RawDef, RawLocalType
from engram.processors.code.syntax import callee_path, node_text, raw_definition


def python_module(path: str) -> tuple[str, str]:
    """(module, package) of a repo-relative path: ``a/b/c.py`` -> (``a.b.c``, ``a.b``);
    ``a/b/__init__.py`` -> (``a.b``, ``a.b``)."""
    stem = path.rsplit(".", 1)[0] if path.endswith((".py", ".pyi")) else path
    parts = [p for p in stem.replace("\\", "/").split("/") if p]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
        dotted = ".".join(parts)
        return dotted, dotted
    return ".".join(parts), ".".join(parts[:-1])


def capture_python(root: ts.Node, source: bytes, package: str) -> tuple[Captured, list[ImportBinding]]:
    captured = Captured()
    imports: list[ImportBinding] = []
    for _index, match in ts.QueryCursor(grammar("python").query).matches(root):
        if "definition.class" in match:
            captured.defs.append(_class(match, source))
        elif "definition.function" in match:
            captured.defs.append(_function(match, source))
        elif "call" in match:
            call = match["call"][0]
            line = call.start_point[0] + 1
            captured.calls.append(RawCall(call.start_byte, callee_path(match["callee"][0], source), line))
        elif "import" in match:
            imports.extend(_imports(match["import"][0], source, package))
        elif "assign" in match:
            target = callee_path(match["target"][0], source)
            start = match["assign"][0].start_byte
            captured.local_types.append(RawLocalType(start, target, callee_path(match["type"][0], source)))
    return captured, imports


def _imports(node: ts.Node, source: bytes, package: str) -> list[ImportBinding]:
    line = node.start_point[0] + 1
    if node.type == "import_statement":
        out: list[ImportBinding] = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                dotted = _field_text(child, "name", source)
                out.append(ImportBinding(_field_text(child, "alias", source), dotted, dotted, line))
            else:
                dotted = node_text(child, source)
                out.append(ImportBinding(dotted.split(".", 1)[0], dotted.split(".", 1)[0], dotted, line))
        return out
    if node.type == "future_import_statement":
        written = "__future__"
    else:
        module_node = node.child_by_field_name("module_name")
        written = node_text(module_node, source).replace(" ", "") if module_node is not None else ""
    base = _absolute(written, package)
    out = []
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name, local = _field_text(child, "name", source), _field_text(child, "alias", source)
        else:
            name = local = node_text(child, source)
        out.append(ImportBinding(local, f"{base}.{name}" if base else name, f"{written}:{name}", line))
    if any(child.type == "wildcard_import" for child in node.named_children):
        out.append(ImportBinding("", base, f"{written}:*", line))
    return out


def _absolute(written: str, package: str) -> str:
    """``..m`` inside package ``a.b.c`` is ``a.b.m``; absolute names are returned as they are."""
    level = len(written) - len(written.lstrip("."))
    if level == 0:
        return written
    parts = package.split(".") if package else []
    keep = parts[: max(len(parts) - (level - 1), 0)]
    rest = written[level:]
    return ".".join([*keep, rest] if rest else keep)


def _field_text(node: ts.Node, field: str, source: bytes) -> str:
    child = node.child_by_field_name(field)
    return node_text(child, source) if child is not None else ""


def _class(match: dict[str, list[ts.Node]], source: bytes) -> RawDef:
    node = match["definition.class"][0]
    bases: list[str] = []
    if "bases" in match:
        for arg in match["bases"][0].named_children:
            if arg.type not in ("keyword_argument", "comment", "dictionary_splat"):
                bases.append(node_text(arg, source))
    body = match["body"][0]
    return raw_definition(node, body, match["name"][0], source, is_class=True, bases=tuple(bases))


def _function(match: dict[str, list[ts.Node]], source: bytes) -> RawDef:
    node = match["definition.function"][0]
    body = match["body"][0]
    return raw_definition(node, body, match["name"][0], source, is_class=False)
