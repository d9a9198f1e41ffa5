"""Call and base resolution across files: through the MRO, imported aliases and module qualifiers."""

from __future__ import annotations

from tests.code.support import graph_of, qualnames

FILES = {
    "shop/base.py": """\
class Repository:
    def save(self, item: object) -> None:
        self.validate(item)

    def validate(self, item: object) -> None:
        pass


def helper() -> int:
    return 1
""",
    "shop/orders.py": """\
import shop.base as b
from shop.base import Repository as Repo, helper as h
from shop import base


class OrderRepository(Repo):
    def place(self, order: object) -> None:
        self.save(order)
        self.audit.record(order)
        super().validate(order)
        h()
        b.helper()
        base.helper()
        missing_function()
        len([order])
""",
    "shop/__init__.py": "from .base import Repository\n\ndefault_repo = Repository()\n",
    "shop/cli.py": """\
import shop


def main() -> None:
    repo = shop.Repository()
    repo.save(1)
    shop.default_repo.validate(2)
""",
}


def test_inherits_through_an_aliased_import() -> None:
    _builder, graph = graph_of(FILES)
    assert qualnames(graph, "shop.orders.OrderRepository", "INHERITS") == {("code_class", "shop.base.Repository")}


def test_self_calls_resolve_through_the_base_class() -> None:
    _builder, graph = graph_of(FILES)
    calls = qualnames(graph, "shop.orders.OrderRepository.place", "CALLS")
    assert ("code_method", "shop.base.Repository.save") in calls  # self.save -> inherited
    assert ("code_method", "shop.base.Repository.validate") in calls  # super().validate


def test_aliases_and_module_qualified_calls_resolve() -> None:
    _builder, graph = graph_of(FILES)
    calls = qualnames(graph, "shop.orders.OrderRepository.place", "CALLS")
    assert ("code_function", "shop.base.helper") in calls  # h(), b.helper() and base.helper() alike
    assert sum(1 for kind, qual in calls if qual == "shop.base.helper") == 1


def test_unresolved_calls_are_kept_as_named_nodes() -> None:
    _builder, graph = graph_of(FILES)
    calls = qualnames(graph, "shop.orders.OrderRepository.place", "CALLS")
    unresolved = {qual for kind, qual in calls if kind == "code_unresolved"}
    assert unresolved == {"missing_function", "len", "super", "shop.orders.OrderRepository.audit.record"}


def test_re_exports_and_constructor_typed_locals_resolve() -> None:
    _builder, graph = graph_of(FILES)
    calls = qualnames(graph, "shop.cli.main", "CALLS")
    assert ("code_class", "shop.base.Repository") in calls  # shop.Repository() via shop/__init__
    assert ("code_method", "shop.base.Repository.save") in calls  # repo = shop.Repository(); repo.save()
    assert ("code_method", "shop.base.Repository.validate") in calls  # a module-level instance, elsewhere


def test_structure_edges() -> None:
    _builder, graph = graph_of(FILES)
    assert qualnames(graph, "shop.base.Repository", "HAS_METHOD") == {
        ("code_method", "shop.base.Repository.save"),
        ("code_method", "shop.base.Repository.validate"),
    }
    contains = {q for kind, q in qualnames(graph, "shop.base", "CONTAINS") if kind != "code_chunk"}
    assert contains == {"shop.base.Repository", "shop.base.helper"}
    assert qualnames(graph, "shop.orders", "IMPORTS") == {("code_module", "shop.base")}
    assert qualnames(graph, "shop.cli", "IMPORTS") == {("code_module", "shop")}


JAVA_FILES = {
    "src/com/acme/Base.java": "package com.acme;\npublic class Base { void audit() {} }\n",
    "src/com/acme/Card.java": """\
package com.acme;
import com.acme.fraud.Fraud;
public class Card extends Base {
  private Fraud fraud;
  boolean authorize() { audit(); this.fraud.check(); Util.log(); return true; }
}
""",
    "src/com/acme/fraud/Fraud.java": (
        "package com.acme.fraud;\npublic class Fraud { public boolean check() { return true; } }\n"
    ),
    "src/com/acme/Util.java": "package com.acme;\nclass Util { static void log() {} }\n",
}


def test_java_resolves_same_package_fields_and_inherited_methods() -> None:
    _builder, graph = graph_of(JAVA_FILES)
    assert qualnames(graph, "com.acme.Card", "INHERITS") == {("code_class", "com.acme.Base")}
    calls = qualnames(graph, "com.acme.Card.authorize", "CALLS")
    assert {
        ("code_method", "com.acme.Base.audit"),
        ("code_method", "com.acme.fraud.Fraud.check"),
        ("code_method", "com.acme.Util.log"),
    } == calls


GO_FILES = {
    "pay/card.go": (
        "package pay\ntype Card struct { Base }\n"  # embedding is Go's inheritance
        "func (c *Card) Authorize() bool { c.audit(); return true }\n"
    ),
    "pay/base.go": "package pay\ntype Base struct{}\nfunc (b *Base) audit() {}\n",
}


def test_go_methods_join_their_type_across_files() -> None:
    _builder, graph = graph_of(GO_FILES)
    assert qualnames(graph, "pay.Base", "HAS_METHOD") == {("code_method", "pay.Base.audit")}
    assert qualnames(graph, "pay.Card", "INHERITS") == {("code_class", "pay.Base")}
    assert qualnames(graph, "pay.Card.Authorize", "CALLS") == {("code_method", "pay.Base.audit")}


TS_FILES = {
    "src/base.ts": "export class Processor { authorize(): boolean { return true; } }\n",
    "src/card.ts": """\
import { Processor as P } from "./base";
import { Fraud } from "./fraud";
export class Card extends P {
  private fraud = new Fraud();
  authorize(): boolean { return this.fraud.check() && super.authorize(); }
}
""",
    "src/fraud.ts": "export class Fraud { check(): boolean { return true; } }\n",
}


def test_typescript_resolves_aliased_bases_and_typed_fields() -> None:
    _builder, graph = graph_of(TS_FILES)
    assert qualnames(graph, "src.card.Card", "INHERITS") == {("code_class", "src.base.Processor")}
    calls = qualnames(graph, "src.card.Card.authorize", "CALLS")
    assert {("code_method", "src.fraud.Fraud.check"), ("code_method", "src.base.Processor.authorize")} == calls
