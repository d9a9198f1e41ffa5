"""Extraction per language: definitions with spans, bases, methods, calls and imports."""

from __future__ import annotations

import pytest

from engram.processors.code.extract import extract
from engram.processors.code.languages import LANGUAGES, grammar, language_for
from engram.processors.code.model import FileSymbols, UnsupportedLanguageError

PY = """\
import os.path
import numpy as np
from . import sibling
from ..pkg.mod import Thing as Alias, other
from typing import *


class Base:
    def run(self) -> None:
        self.step()

    def step(self) -> None:
        pass


class Child(Base, metaclass=Meta):
    class Inner:
        pass

    @property
    def value(self) -> int:
        def helper() -> int:
            return np.sum([1])
        return helper()

    async def fetch(self):
        await Alias().go()
"""


def by_qual(symbols: FileSymbols) -> dict[str, tuple[str, int, int, tuple[str, ...]]]:
    return {d.qualname: (d.kind, d.start_line, d.end_line, d.bases) for d in symbols.definitions}


def test_python_definitions_have_kinds_spans_and_bases() -> None:
    symbols = extract("src/app/core.py", PY)
    assert symbols.module == "src.app.core" and symbols.package == "src.app"
    defs = by_qual(symbols)
    assert defs["src.app.core.Base"] == ("class", 8, 13, ())
    assert defs["src.app.core.Base.run"] == ("method", 9, 10, ())
    assert defs["src.app.core.Child"] == ("class", 16, 27, ("Base",))  # the metaclass keyword is not a base
    assert defs["src.app.core.Child.Inner"][0] == "class"
    assert defs["src.app.core.Child.value"] == ("method", 21, 24, ())  # the def line, not the decorator
    assert defs["src.app.core.Child.value.helper"][0] == "function"
    assert defs["src.app.core.Child.fetch"][0] == "method"


def test_python_imports_resolve_relative_names() -> None:
    imports = {(i.local, i.target, i.raw) for i in extract("src/app/core.py", PY).imports}
    assert ("os", "os", "os.path") in imports
    assert ("np", "numpy", "numpy") in imports
    assert ("sibling", "src.app.sibling", ".:sibling") in imports
    assert ("Alias", "src.pkg.mod.Thing", "..pkg.mod:Thing") in imports
    assert ("other", "src.pkg.mod.other", "..pkg.mod:other") in imports
    assert ("", "typing", "typing:*") in imports


def test_python_calls_keep_their_scope_and_dotted_callee() -> None:
    calls = {(c.scope, c.callee) for c in extract("src/app/core.py", PY).calls}
    assert ("src.app.core.Base.run", "self.step") in calls
    assert ("src.app.core.Child.value.helper", "np.sum") in calls
    assert ("src.app.core.Child.value", "helper") in calls
    assert ("src.app.core.Child.fetch", "Alias().go") in calls


JS = """\
import { Base as B, util } from "./base";
import Default from "../d.js";
import * as ns from "lodash";
export class Card extends B {
  constructor() { super(); this.fraud = new FraudCheck(); }
  authorize(x) { this.fraud.check(x); return ns.map([x], util); }
}
export function top() { const c = new Card(); c.authorize(1); }
const arrow = (q) => top();
"""


def test_javascript_classes_methods_calls_and_imports() -> None:
    symbols = extract("web/pay/card.js", JS)
    defs = by_qual(symbols)
    assert defs["web.pay.card.Card"][0] == "class" and defs["web.pay.card.Card"][3] == ("B",)
    assert defs["web.pay.card.Card.authorize"][0] == "method"
    assert defs["web.pay.card.top"][0] == "function" and defs["web.pay.card.arrow"][0] == "function"
    calls = {(c.scope, c.callee) for c in symbols.calls}
    assert ("web.pay.card.Card.authorize", "this.fraud.check") in calls
    assert ("web.pay.card.top", "c.authorize") in calls
    imports = {(i.local, i.target) for i in symbols.imports}
    assert {
        ("B", "web.pay.base.Base"),
        ("util", "web.pay.base.util"),
        ("Default", "web.d.Default"),
        ("ns", "lodash"),
    } <= imports
    assert ("web.pay.card.Card", "this.fraud", "FraudCheck") in {
        (t.scope, t.name, t.type_expr) for t in symbols.local_types
    }


TS = """\
import { Processor } from "./base";
export interface Auth extends Checker, Logger<string> { authorize(): boolean }
export class Card<T> extends Processor<T> implements Auth {
  private fraud = new FraudCheck();
  authorize(): boolean { return this.fraud.check(); }
}
"""


@pytest.mark.parametrize(("language", "path"), [("typescript", "src/card.ts"), ("tsx", "src/card.tsx")])
def test_typescript_heritage_drops_type_arguments(language: str, path: str) -> None:
    symbols = extract(path, TS, language)
    defs = by_qual(symbols)
    assert defs["src.card.Auth"][3] == ("Checker", "Logger")
    assert defs["src.card.Card"][3] == ("Processor", "Auth")
    assert defs["src.card.Card.authorize"][0] == "method"
    assert ("src.card.Card.authorize", "this.fraud.check") in {(c.scope, c.callee) for c in symbols.calls}


JAVA = """\
package com.acme.pay;
import com.acme.fraud.FraudCheckService;
import java.util.*;
public class Card extends Processor implements Auth, Other<X> {
  private FraudCheckService fraud;
  public Card() { super(); }
  public boolean authorize(int x) { return this.fraud.check(x) && helper(); }
  boolean helper() { return true; }
}
"""


def test_java_names_top_level_types_after_the_package() -> None:
    symbols = extract("src/main/java/com/acme/pay/Card.java", JAVA)
    assert symbols.package == "com.acme.pay"
    defs = by_qual(symbols)
    assert defs["com.acme.pay.Card"] == ("class", 4, 9, ("Processor", "Auth", "Other"))
    assert defs["com.acme.pay.Card.authorize"][0] == "method"
    assert defs["com.acme.pay.Card.Card"][0] == "method"  # the constructor
    calls = {(c.scope, c.callee) for c in symbols.calls}
    assert {("com.acme.pay.Card.authorize", "this.fraud.check"), ("com.acme.pay.Card.authorize", "helper")} <= calls
    imports = {(i.local, i.target) for i in symbols.imports}
    assert imports == {("FraudCheckService", "com.acme.fraud.FraudCheckService"), ("", "java.util")}


GO = """\
package payments

import (
\t"fmt"
\tv "example.com/chain/validator"
)

type Base struct{}
type Card struct {
\tBase
\tname string
}

func (c *Card) Authorize(x int) bool { fmt.Println(x); return c.check() && v.Validate(x) }
func New() *Card { return &Card{} }
"""


def test_go_structs_embedding_and_receiver_methods() -> None:
    symbols = extract("pay/card.go", GO)
    defs = by_qual(symbols)
    assert defs["pay.Card"] == ("class", 9, 12, ("Base",))
    assert defs["pay.Card.Authorize"][0] == "method"
    assert defs["pay.New"][0] == "function"
    assert ("pay.Card.Authorize", "v.Validate") in {(c.scope, c.callee) for c in symbols.calls}
    assert {(i.local, i.target) for i in symbols.imports} == {("fmt", "fmt"), ("v", "example.com.chain.validator")}


def test_every_language_has_a_query_file_that_compiles() -> None:
    for name in LANGUAGES:
        assert grammar(name).query.pattern_count >= 5


def test_unknown_languages_are_a_typed_error() -> None:
    assert language_for("a/b.rs", "python") == "python"
    with pytest.raises(UnsupportedLanguageError):
        language_for("README.md")
    with pytest.raises(UnsupportedLanguageError):
        extract("notes.txt", "hello")
