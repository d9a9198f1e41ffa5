"""The worker's ``/``: a page of links to what a person opens on a worker (the facts page, the
metrics, the health checks, the view's counts), in place of Faust's ``{"status": "OK"}``.

Registered by `create_app` before Faust adds its own index at ``/`` (when the web server starts),
so this route answers first; a test pins that."""

from __future__ import annotations

from typing import Any, Final

from faust.types import AppT

LINKS: Final[tuple[tuple[str, str], ...]] = (
    ("/facts/ui", "Facts: what Engram believes about a user, with sources and history; edit, delete, clear"),
    ("/metrics", "Metrics (Prometheus text format)"),
    ("/health", "Liveness"),
    ("/ready", "Readiness: broker, stores, table recovery"),
    ("/view", "The in-process view: node counts by layer and user"),
)

PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Engram worker {app_id}</title>
<style>body {{ font: 15px system-ui, sans-serif; margin: 2rem; max-width: 48rem; }} li {{ margin: .4rem 0; }}</style>
</head><body><h1>Engram worker <code>{app_id}</code></h1><ul>
{items}
</ul></body></html>
"""


def index_html(app_id: str) -> str:
    items = "\n".join(f'<li><a href="{path}">{path}</a>: {text}</li>' for path, text in LINKS)
    return PAGE.format(app_id=app_id, items=items)


def register_index(app: AppT, app_id: str) -> None:
    page = index_html(app_id)

    @app.page("/")
    async def index(web: Any, request: Any) -> Any:
        return web.html(page)
