"""Issues 18 and 48 (item 10), the facts page in a real headless browser (Debian's chromium, which
`make browser` installs, driven by Playwright through ``executable_path``: Playwright's own download
fails here).

A worker with a token key ingests Alice's and Bob's turns (Alice changes job and town: two facts
replace earlier ones). From the worker's ``/`` a person follows the link to the facts page; with
Alice's token it lists her facts, each with its category, horizon, confidence, when it was stated,
its source turn's text and the value it replaced; the summary counts each category, and a category
chip, the horizon filter and ``?user=…&search=…`` in the address filter the list. Each row has its
own reason box: an edit sends that row's reason, which the log keeps, and the edited fact then shows
the chain it replaced; a long value wraps in full. Clearing a category sends the clear form's own
reason. With Bob's token the page shows the refusal and none of Alice's facts. A screenshot of the
page is written to the test's temporary folder (``facts-page.png``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from engram.infra.config import StackInfo
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, FactDecided, MemoryEvent
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import publish_turns, standin_config
from tests.e2e.test_facts_e2e import ALICE_ACTIVE, interleaved_turns, wait_ingested
from tests.e2e.test_facts_edit_e2e import listed
from tests.e2e.test_trust_e2e import SECRET, get, token, wait_for

pytestmark = pytest.mark.e2e

CHROMIUM = Path(os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium"))
LONG_TITLE = "Google, " + "staff engineer on the payments ledger and its reconciliation service, " * 5


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"no chromium at {CHROMIUM}: `make browser` installs Debian's (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def listed_now(page: Page) -> None:
    """Until the page has finished a listing (or shown why not): its status line says so last."""
    page.wait_for_function("document.getElementById('status').textContent !== ''")


def show(page: Page, user: str, tok: str) -> None:
    page.fill("#user", user)
    page.fill("#token", tok)
    page.click("#who button")
    listed_now(page)


def rows(page: Page) -> dict[str, str]:
    """relation=value -> fact id, as the page shows them."""
    shown: dict[str, str] = {}
    for row in page.query_selector_all("#facts tr"):
        relation, value = row.query_selector(".relation"), row.query_selector("textarea.value")
        assert relation is not None and value is not None
        shown[f"{relation.inner_text()}={value.input_value()}"] = str(row.get_attribute("data-fact"))
    return shown


def cell(page: Page, relation: str, name: str) -> str:
    return page.locator("#facts tr", has_text=relation).locator(f"td.{name}").inner_text()


def until_shown(page: Page, check: Callable[[], bool], what: str) -> None:
    """List again until ``check`` holds: a change shows once the worker applied it."""
    deadline = time.monotonic() + 20
    while not check():
        assert time.monotonic() < deadline, what
        page.click("#who button")
        page.wait_for_timeout(300)
        listed_now(page)


def logged_reasons(config: EngramConfig) -> list[tuple[str, str, str]]:
    """(rule, value, reason) of every person's change the worker's event log holds."""
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    found: list[tuple[str, str, str]] = []
    for event in eventlog_reader(config).read([config.topics.memory]):
        change = change_as(codec.decode(event["value"] or b""), FactDecided)
        if change is not None and change["rule"].startswith("user-"):
            found.append((change["rule"], change["value"], change["reason"]))
    return sorted(found)


def check_a_row(page: Page, config: EngramConfig) -> None:
    """Each fact's details, for the new job (which replaced the old one) and its source turn."""
    _, listing = get(config, "/facts?user=alice&search=google", token("user:alice"))
    [job] = listing["facts"]
    horizon = job["horizon"].replace("_", " ")
    assert cell(page, "works_at", "kind").split() == [job["category"], *horizon.split(), "correction"]
    assert cell(page, "works_at", "confidence") == f"{round(job['confidence'] * 100)}%"
    assert "2026-01-01 00:03 UTC" in cell(page, "works_at", "stated")
    assert "I just started a new job at Google in Mountain View" in cell(page, "works_at", "source")
    assert "alice-turn-3" in cell(page, "works_at", "source")
    replaced = cell(page, "works_at", "replaced")
    assert replaced.startswith("Meta") and "stated 2026-01-01 00:00 UTC" in replaced
    assert "replace-single-valued" in replaced
    history = f"/facts/history?user=alice&fact_id={job['fact_id']}"
    assert get(config, history, token("user:bob"))[0] == 403  # behind the same gate as the listing
    assert get(config, "/facts/history?user=alice", token("user:alice"))[0] == 400  # no fact named


def check_summary_and_filters(page: Page, config: EngramConfig) -> None:
    _, summary = get(config, "/facts/summary?user=alice", token("user:alice"))
    chips = {c.get_attribute("data-category"): c.inner_text() for c in page.query_selector_all("#summary .chip")}
    assert chips == {category: f"{category} {count}" for category, count in summary["by_category"].items()}
    page.click("#summary .chip[data-category=skill]")
    until_shown(page, lambda: set(rows(page)) == {"speaks_language=Python", "speaks_language=Go"}, "the chip")
    assert "category=skill" in page.url
    page.click("#summary .chip[data-category=skill]")  # again: no category
    until_shown(page, lambda: len(rows(page)) == len(ALICE_ACTIVE), "the chip off")
    page.select_option("#filter-horizon", "long_term")
    page.click("#who button")
    listed_now(page)
    shown = [h.inner_text() for h in page.query_selector_all("#facts td.kind .horizon")]
    _, long_term = get(config, "/facts?user=alice&horizon=long_term", token("user:alice"))
    assert "horizon=long_term" in page.url and shown == ["long term"] * long_term["total"]
    page.select_option("#filter-horizon", "")
    base = page.url.split("?")[0]
    page.goto(f"{base}?user=alice&search=google")  # the address alone: the user, the search, the tab's token
    listed_now(page)
    assert page.input_value("#user") == "alice" and set(rows(page)) == {"works_at=Google"}
    page.fill("#search", "")
    page.click("#who button")
    until_shown(page, lambda: len(rows(page)) == len(ALICE_ACTIVE), "the search cleared")


def edit(page: Page, relation: str, value: str, reason: str) -> None:
    row = page.locator("#facts tr", has_text=relation)
    row.locator("textarea.value").fill(value)
    row.locator("input.reason").fill(reason)
    row.locator("button.save").click()
    page.wait_for_function("document.getElementById('status').textContent.includes('change(s) sent')")


def test_the_facts_page_shows_sources_history_and_filters_and_edits_with_reasons(
    browser: Browser, stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config: EngramConfig = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns: list[ConversationTurn] = [{**t, "token": token(f"user:{t['user_id']}")} for t in interleaved_turns()]
    publish_turns(config, turns)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_ingested(worker, config, len(turns))
        wait_for(lambda: set(listed(config)) == ALICE_ACTIVE, "Alice's facts")
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        page.goto(f"http://{config.web_host}:{config.web_port}/")
        assert page.locator("a[href='/metrics']").count() == 1
        page.click("a[href='/facts/ui']")
        show(page, "alice", token("user:alice"))
        assert set(rows(page)) == {f"{r}={v}" for r, v in ALICE_ACTIVE}
        until_shown(page, lambda: cell(page, "works_at", "replaced").startswith("Meta"), "the history")
        check_a_row(page, config)
        check_summary_and_filters(page, config)

        edit(page, "lives_in", "Berlin", "moved")
        assert page.locator("#facts tr", has_text="works_at").locator("input.reason").input_value() == ""
        until_shown(page, lambda: "lives_in=Berlin" in rows(page), "the edit never showed on the page")
        until_shown(page, lambda: "Mountain View" in cell(page, "lives_in", "replaced"), "the edit's history")
        replaced = cell(page, "lives_in", "replaced")
        assert replaced.index("Mountain View") < replaced.index("Menlo Park")  # newest first
        assert "user-edit: edited by user:alice: moved" in replaced
        assert "a person's edit" not in cell(page, "lives_in", "source")  # an edit keeps the fact's sources

        edit(page, "works_at", LONG_TITLE, "the full title")
        until_shown(page, lambda: f"works_at={LONG_TITLE.strip()}" in rows(page), "the long value")
        value = page.locator("#facts tr", has_text="works_at").locator("textarea.value")
        sizes = value.evaluate("v => [v.scrollHeight, v.clientHeight, v.scrollWidth, v.clientWidth]")
        assert sizes[0] <= sizes[1] + 2 and sizes[2] <= sizes[3], f"the long value is clipped: {sizes}"
        screenshot = tmp_path / "facts-page.png"
        # Written here: Playwright writes a ``path`` on a thread of its loop's executor, which outlives the test.
        screenshot.write_bytes(page.screenshot(full_page=True))
        assert screenshot.stat().st_size > 10_000

        page.select_option("#clear-category", "skill")
        page.fill("#clear-reason", "not mine")
        page.click("#clear button")
        page.wait_for_function("document.getElementById('status').textContent.includes('2 change(s) sent')")
        wait_for(lambda: not any(r == "speaks_language" for r, _ in listed(config)), "the clear never applied")
        until_shown(page, lambda: not any(s.startswith("speaks_language=") for s in rows(page)), "the clear")

        show(page, "alice", token("user:bob"))
        page.wait_for_function("document.getElementById('status').textContent.includes('error 403')")
        assert "error 403" in page.inner_text("#status") and rows(page) == {}
        page.close()
    reasons = logged_reasons(config)
    assert [(rule, reason.split(": ", 1)[-1]) for rule, _, reason in reasons] == [
        ("user-delete", "not mine"), ("user-delete", "not mine"),
        ("user-edit", "moved"), ("user-edit", "the full title"),
    ], reasons  # fmt: skip
