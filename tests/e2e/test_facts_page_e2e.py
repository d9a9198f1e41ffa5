"""Issue 18, the facts page in a real headless browser (Debian's chromium, which `make test`
installs, driven by Playwright through ``executable_path``: Playwright's own download fails here).

A worker with a token key ingests Alice's and Bob's turns. On `/facts/ui`, with Alice's token, the
page lists her facts; editing one sends the change, which reaches the log as a FactDecided event
and shows in the next listing; clearing a category empties it. With Bob's token the page shows the
refusal and none of Alice's facts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from engram.infra.config import StackInfo
from engram.schemas.records import ConversationTurn
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess
from tests.e2e.support import publish_turns, standin_config
from tests.e2e.test_facts_e2e import ALICE_ACTIVE, interleaved_turns, wait_ingested
from tests.e2e.test_facts_edit_e2e import assert_changes_logged, listed
from tests.e2e.test_trust_e2e import SECRET, token, wait_for

pytestmark = pytest.mark.e2e

CHROMIUM = Path(os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), f"no chromium at {CHROMIUM}: `make test` installs Debian's (apt-get install chromium)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def show(page: Page, user: str, tok: str) -> None:
    page.fill("#user", user)
    page.fill("#token", tok)
    page.click("#who button")
    page.wait_for_function("document.getElementById('status').textContent !== ''")


def rows(page: Page) -> dict[str, str]:
    """relation=value -> fact id, as the page shows them."""
    shown: dict[str, str] = {}
    for row in page.query_selector_all("#facts tr"):
        cells = row.query_selector_all("td")
        value = row.query_selector("input.value")
        assert value is not None
        shown[f"{cells[0].inner_text()}={value.input_value()}"] = str(row.get_attribute("data-fact"))
    return shown


def test_the_facts_page_lists_edits_and_clears(
    browser: Browser, stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config: EngramConfig = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns: list[ConversationTurn] = [{**t, "token": token(f"user:{t['user_id']}")} for t in interleaved_turns()]
    publish_turns(config, turns)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_ingested(worker, config, len(turns))
        wait_for(lambda: set(listed(config)) == ALICE_ACTIVE, "Alice's facts")
        page = browser.new_page()
        page.goto(f"http://{config.web_host}:{config.web_port}/facts/ui")
        show(page, "alice", token("user:alice"))
        assert set(rows(page)) == {f"{r}={v}" for r, v in ALICE_ACTIVE}

        row = page.locator("#facts tr", has_text="lives_in")
        row.locator("input.value").fill("Berlin")
        page.fill("#reason", "moved")
        row.locator("button.save").click()
        page.wait_for_function("document.getElementById('status').textContent.includes('change(s) sent')")
        deadline = time.monotonic() + 20
        while "lives_in=Berlin" not in rows(page):
            assert time.monotonic() < deadline, "the edit never showed on the page"
            page.click("#who button")
            page.wait_for_timeout(300)

        page.fill("#category", "skill")
        page.click("#clear button")
        page.wait_for_function("document.getElementById('status').textContent.includes('2 change(s) sent')")
        wait_for(lambda: not any(r == "speaks_language" for r, _ in listed(config)), "the clear never applied")
        page.click("#who button")
        page.wait_for_timeout(300)
        assert not any(shown.startswith("speaks_language=") for shown in rows(page))

        show(page, "alice", token("user:bob"))  # the status still shows the last list until the 403 comes
        page.wait_for_function("document.getElementById('status').textContent.includes('error 403')")
        assert "error 403" in page.inner_text("#status") and rows(page) == {}
        page.close()
    assert_changes_logged(config, edits=1, deletes=2, reason="moved")  # the page's edit and clear
