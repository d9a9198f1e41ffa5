"""Small helpers over tree-sitter nodes shared by the language modules."""

from __future__ import annotations

import tree_sitter as ts

from engram.processors.code.scopes import RawDef

_NAME_TYPES = frozenset(
    {"identifier", "type_identifier", "field_identifier", "property_identifier", "package_identifier", "this", "super"}
)
_MEMBER_TYPES = frozenset({"attribute", "member_expression", "selector_expression", "field_access"})
_CALL_TYPES = frozenset(
    {"call", "call_expression", "method_invocation", "new_expression", "object_creation_expression"}
)


def node_text(node: ts.Node, source: bytes) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


def compact(raw: bytes, limit: int = 240) -> str:
    """A one-line signature: whitespace collapsed, at most ``limit`` characters."""
    text = " ".join(raw.decode("utf-8", "replace").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def callee_path(node: ts.Node, source: bytes, depth: int = 0) -> str:
    """A called expression as a dotted path: ``a.b.c``; a call receiver becomes ``f()`` (``C().m``),
    anything else ``?`` (``x[0].m`` -> ``?.m``)."""
    kind = node.type
    if kind in _NAME_TYPES or kind == "dotted_name" or kind == "scoped_identifier":
        return node_text(node, source)
    if depth > 8:
        return "?"
    if kind in _MEMBER_TYPES:
        obj = (
            node.child_by_field_name("object")
            or node.child_by_field_name("operand")
            or node.child_by_field_name("value")
        )
        attr = (
            node.child_by_field_name("attribute")
            or node.child_by_field_name("property")
            or node.child_by_field_name("field")
            or node.child_by_field_name("name")
        )
        head = callee_path(obj, source, depth + 1) if obj is not None else "?"
        return f"{head}.{node_text(attr, source)}" if attr is not None else head
    if kind in _CALL_TYPES:
        func = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        func = func or node.child_by_field_name("type")
        return f"{callee_path(func, source, depth + 1)}()" if func is not None else "?"
    if (
        kind in ("parenthesized_expression", "await", "await_expression", "non_null_expression")
        and node.named_child_count
    ):
        first = node.named_children[0]
        return callee_path(first, source, depth + 1)
    return "?"


def raw_definition(
    node: ts.Node,
    body: ts.Node,
    name: ts.Node,
    source: bytes,
    *,
    is_class: bool,
    signature: str | None = None,
    bases: tuple[str, ...] = (),
    owner: str = "",
) -> RawDef:
    """A definition's span, name and lines; its signature defaults to the text before its body."""
    return RawDef(
        node.start_byte,
        node.end_byte,
        is_class,
        node_text(name, source),
        node.start_point[0] + 1,
        node.end_point[0] + 1,
        compact(source[node.start_byte : body.start_byte]) if signature is None else signature,
        bases,
        owner,
    )
