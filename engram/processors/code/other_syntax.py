"""JavaScript, TypeScript, Java and Go: module names, imports and the query captures.

Module qualnames come from the path (``src/pay/card.ts`` -> ``src.pay.card``). Java and Go name
top-level definitions after their package (``com.acme.Card``, ``payments.Card``) so that imports
and same-package references resolve across files; the file still has its own module node.
"""

from __future__ import annotations

import posixpath

import tree_sitter as ts

from engram.processors.code.languages import grammar
from engram.processors.code.model import ImportBinding
from engram.processors.code.scopes import Captured, RawCall, RawDef, RawLocalType
from engram.processors.code.syntax import callee_path, compact, node_text, raw_definition

Match = dict[str, list[ts.Node]]


def path_module(path: str) -> tuple[str, str]:
    stem = path.rsplit(".", 1)[0] if "." in posixpath.basename(path) else path
    parts = [p for p in stem.replace("\\", "/").split("/") if p and p != "."]
    return ".".join(parts), ".".join(parts[:-1])


def capture_other(name: str, path: str, root: ts.Node, source: bytes) -> tuple[Captured, list[ImportBinding], str, str]:
    """(captured, imports, module, top-level scope) for a non-Python file."""
    module, directory = path_module(path)
    captured = Captured()
    import_nodes: list[ts.Node] = []
    package = directory
    seen: set[tuple[int, str]] = set()
    for _index, match in ts.QueryCursor(grammar(name).query).matches(root):
        if "definition.class" in match or "definition.function" in match:
            _add_definition(captured, match, source, seen)
        elif "call" in match:
            call = match["call"][0]
            callee = (
                _java_callee(call, source)
                if call.type == "method_invocation"
                else callee_path(match["callee"][0], source)
            )
            captured.calls.append(RawCall(call.start_byte, callee, call.start_point[0] + 1))
        elif "import" in match:
            import_nodes.append(match["import"][0])
        elif "package" in match:
            package = _package(name, match["package"][0], source, directory)
        elif "assign" in match or "assign.field" in match:
            captured.local_types.append(_local_type(name, match, source))
        if "receiver" in match:
            captured.local_types.extend(_receiver_type(match, source))
    if name not in ("java", "go"):
        package = module
    imports: list[ImportBinding] = []
    for node in import_nodes:
        imports.extend(_imports(name, node, source, directory))
    return captured, imports, module, package


def _add_definition(captured: Captured, match: Match, source: bytes, seen: set[tuple[int, str]]) -> None:
    """Optional quantified captures can match one node more than once: keep the first."""
    is_class = "definition.class" in match
    node = match["definition.class" if is_class else "definition.function"][0]
    key = (node.start_byte, node.type)
    if key in seen:
        return
    seen.add(key)
    captured.defs.append(_class(match, source) if is_class else _function(match, source))


def _package(name: str, node: ts.Node, source: bytes, directory: str) -> str:
    if name == "go":
        return directory or node_text(node, source)
    for child in node.named_children:
        if child.type in ("scoped_identifier", "identifier"):
            return node_text(child, source)
    return directory


def _class(match: Match, source: bytes) -> RawDef:
    node = match["definition.class"][0]
    body = match["body"][0]
    bases = [_strip_generics(node_text(b, source)) for b in match.get("base", [])]
    for heritage in match.get("heritage", []):
        bases.extend(_heritage(heritage, source))
    signature = compact(source[node.start_byte : body.start_byte])
    if node.type == "type_spec":
        signature = f"type {signature} {body.type.removesuffix('_type')}"
        bases.extend(_embedded(body, source) if body.type == "struct_type" else [])
    return raw_definition(node, body, match["name"][0], source, is_class=True, signature=signature, bases=tuple(bases))


_CLAUSES = frozenset(
    {
        "class_heritage",
        "extends_clause",
        "implements_clause",
        "extends_type_clause",
        "superclass",
        "super_interfaces",
        "extends_interfaces",
        "type_list",
    }
)


def _heritage(node: ts.Node, source: bytes) -> list[str]:
    """``extends A implements B, C`` in TypeScript and Java, as base names without type arguments."""
    out: list[str] = []
    for child in node.named_children:
        if child.type in _CLAUSES:
            out.extend(_heritage(child, source))
        elif child.type not in ("type_arguments", "comment"):
            out.append(_strip_generics(node_text(child, source)))
    return out


def _embedded(struct: ts.Node, source: bytes) -> list[str]:
    """Go struct embedding (a field with a type and no name) is Go's inheritance."""
    out: list[str] = []
    for fields in struct.named_children:
        for field in fields.named_children:
            if field.type == "field_declaration" and field.child_by_field_name("name") is None:
                kind = field.child_by_field_name("type")
                if kind is not None:
                    out.append(node_text(kind, source).lstrip("*"))
    return out


def _strip_generics(text: str) -> str:
    return text.split("<", 1)[0].strip()


def _function(match: Match, source: bytes) -> RawDef:
    node = match["definition.function"][0]
    body = match["body"][0]
    owner = ""
    if "receiver" in match:
        receiver = node_text(match["receiver"][0], source).strip("()").split()
        owner = receiver[-1].lstrip("*").split("[", 1)[0] if receiver else ""
    return raw_definition(node, body, match["name"][0], source, is_class=False, owner=owner)


def _receiver_type(match: Match, source: bytes) -> list[RawLocalType]:
    """A Go receiver ``(c *Card)`` types ``c`` as ``Card`` inside the method body."""
    words = node_text(match["receiver"][0], source).strip("()").split()
    if len(words) != 2:
        return []
    owner = words[1].lstrip("*").split("[", 1)[0]
    return [RawLocalType(match["body"][0].start_byte, words[0], owner)]


def _java_callee(call: ts.Node, source: bytes) -> str:
    name = call.child_by_field_name("name")
    obj = call.child_by_field_name("object")
    method = node_text(name, source) if name is not None else "?"
    return f"{callee_path(obj, source)}.{method}" if obj is not None else method


def _local_type(name: str, match: Match, source: bytes) -> RawLocalType:
    node = (match.get("assign") or match["assign.field"])[0]
    target = callee_path(match["target"][0], source)
    if "assign.field" in match:
        target = f"this.{target}"
    return RawLocalType(node.start_byte, target, _strip_generics(callee_path(match["type"][0], source)))


def _imports(name: str, node: ts.Node, source: bytes, directory: str) -> list[ImportBinding]:
    line = node.start_point[0] + 1
    if name == "java":
        return _java_import(node, source, line)
    if name == "go":
        return _go_import(node, source, line)
    return _es_import(node, source, line, directory)


def _java_import(node: ts.Node, source: bytes, line: int) -> list[ImportBinding]:
    text = node_text(node, source).removeprefix("import").strip().rstrip(";").strip()
    text = text.removeprefix("static").strip()
    if text.endswith(".*"):
        return [ImportBinding("", text[:-2], text, line)]
    return [ImportBinding(text.rsplit(".", 1)[-1], text, text, line)]


def _go_import(node: ts.Node, source: bytes, line: int) -> list[ImportBinding]:
    path_node = node.child_by_field_name("path")
    alias_node = node.child_by_field_name("name")
    path = node_text(path_node, source).strip('"`') if path_node is not None else ""
    alias = node_text(alias_node, source) if alias_node is not None else path.rsplit("/", 1)[-1]
    target = path.replace("/", ".")
    return [ImportBinding("" if alias in (".", "_") else alias, target, path, line)]


def _es_import(node: ts.Node, source: bytes, line: int, directory: str) -> list[ImportBinding]:
    source_node = node.child_by_field_name("source")
    if source_node is None:
        return []
    spec = node_text(source_node, source).strip("'\"`")
    module = _es_module(spec, directory)
    out: list[ImportBinding] = []
    for clause in node.named_children:
        if clause.type != "import_clause":
            continue
        for part in clause.named_children:
            if part.type == "identifier":  # default import: assume it is named like the binding
                local = node_text(part, source)
                out.append(ImportBinding(local, f"{module}.{local}", f"{spec}:default", line))
            elif part.type == "namespace_import":
                local = node_text(part, source).split()[-1]
                out.append(ImportBinding(local, module, f"{spec}:*", line))
            elif part.type == "named_imports":
                out.extend(_named_imports(part, source, spec, module, line))
    if not out:
        out.append(ImportBinding("", module, spec, line))  # side-effect import
    return out


def _named_imports(node: ts.Node, source: bytes, spec: str, module: str, line: int) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    for item in node.named_children:
        if item.type != "import_specifier":
            continue
        name_node = item.child_by_field_name("name")
        alias_node = item.child_by_field_name("alias")
        if name_node is None:
            continue
        imported = node_text(name_node, source)
        local = node_text(alias_node, source) if alias_node is not None else imported
        out.append(ImportBinding(local, f"{module}.{imported}", f"{spec}:{imported}", line))
    return out


def _es_module(spec: str, directory: str) -> str:
    """``./card`` from ``src/pay`` -> ``src.pay.card``; a package name is kept (dots for slashes)."""
    if spec.startswith("."):
        joined = posixpath.normpath(posixpath.join(directory.replace(".", "/"), spec))
        stem = joined.rsplit(".", 1)[0] if "." in posixpath.basename(joined) else joined
        return ".".join(p for p in stem.split("/") if p and p != ".")
    return spec.replace("/", ".")
