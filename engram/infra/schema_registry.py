"""The schema registry stand-in: a tiny Confluent-compatible registry, in process, on 127.0.0.1.

For what spans processes in registry mode (a worker and an SDK: tests, ``engram bench client``):
confluent-kafka's ``mock://`` registry lives inside one client object, so a worker process and
the SDK would each number schemas on their own. This one serves, over HTTP, the two calls the
Avro serde makes: register a schema under a subject (one id per distinct schema, as a registry
gives) and fetch a schema by id; and the list of subjects, for checks. It keeps schemas in
memory only; production runs a real registry (docker-compose.yml).

    with schema_registry() as url:
        worker_config = replace(config, schema_registry_url=url)
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from engram.infra.local_http import JsonHandler, serving

REGISTER = re.compile(r"^/subjects/(?P<subject>[^/?]+)/versions(?:\?.*)?$")
BY_ID = re.compile(r"^/schemas/ids/(?P<id>\d+)(?:\?.*)?$")


class RegistryHandler(JsonHandler):
    lock: ClassVar[threading.Lock]
    ids: ClassVar[dict[str, int]]  # canonical schema JSON -> id
    texts: ClassVar[dict[int, str]]
    subjects: ClassVar[dict[str, list[int]]]

    def do_POST(self) -> None:
        found = REGISTER.match(self.path)
        if found is None:
            self.send_json(404, json.dumps({"error_code": 404, "message": f"no route {self.path}"}))
            return
        body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        canonical = json.dumps(json.loads(body["schema"]), sort_keys=True)
        subject = found["subject"]
        with self.lock:
            schema_id = self.ids.setdefault(canonical, len(self.ids) + 1)
            self.texts[schema_id] = body["schema"]
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            version = versions.index(schema_id) + 1
        self.send_json(200, json.dumps({"id": schema_id, "subject": subject, "version": version}))

    def do_GET(self) -> None:
        if self.path == "/subjects":
            with self.lock:
                self.send_json(200, json.dumps(sorted(self.subjects)))
            return
        found = BY_ID.match(self.path)
        with self.lock:
            text = self.texts.get(int(found["id"])) if found else None
        if text is None:
            self.send_json(404, json.dumps({"error_code": 40403, "message": "Schema not found"}))
            return
        self.send_json(200, json.dumps({"schema": text, "schemaType": "AVRO"}))


def subjects(url: str) -> list[str]:
    """The subjects registered so far."""
    with urllib.request.urlopen(f"{url}/subjects", timeout=5) as answer:  # noqa: S310 - our own local server
        return list(json.loads(answer.read()))


@contextmanager
def schema_registry() -> Iterator[str]:
    """A fresh, empty registry; yields its URL."""
    handler = type("Registry", (RegistryHandler,), {"lock": threading.Lock(), "ids": {}, "texts": {}, "subjects": {}})
    with serving(handler) as url:
        yield url
