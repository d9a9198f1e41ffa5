"""A small agent loop on Engram's client SDK: remember each turn, answer from a compiled context.

For every user message the agent publishes the user's turn, asks Engram for a compiled context
for that message, answers (a stand-in for your model call: it quotes what the context recalled),
and publishes its own answer as an assistant turn. At the end it prints the last compiled
context: each item's kind, score and text, and the events it cites (topic/partition@offset).

Run it against the stack `engram up` started and a worker (`engram worker`) in another shell::

    .venv/bin/python examples/agent_app.py            # user "ada"; --user NAME for another

The broker and topics come from the workers' ENGRAM_* settings (ENGRAM_BOOTSTRAP_SERVERS,
ENGRAM_TOPIC_PREFIX, ENGRAM_SCHEMA_REGISTRY_URL, and ENGRAM_TOKEN when the workers have an auth
key), else from the stack recorded in ``$ENGRAM_DATA_DIR/stack.json`` (``.engram/stack.json``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from pathlib import Path
from typing import Any

from engram_client import ClientConfig, EngramClient

MESSAGES = [
    "Hi! I'm Ada, I just moved to Berlin for a job at a robotics start-up.",
    "I'm allergic to peanuts, so please keep that in mind for restaurant tips.",
    "Can you suggest a place for dinner near my new office?",
]
QUESTION = "Where do I live, and what should you remember about food?"


def client_config() -> ClientConfig:
    """The workers' ENGRAM_* settings, over the stack `engram up` recorded (when no broker is set)."""
    env = dict(os.environ)
    if "ENGRAM_BOOTSTRAP_SERVERS" not in env:
        try:  # the server package sits beside the client in a checkout's virtual environment
            from engram.streams.local import stack_environment
        except ImportError:
            pass
        else:
            env = {**(stack_environment(Path(env.get("ENGRAM_DATA_DIR", ".engram"))) or {}), **env}
    return ClientConfig.from_env(env)


def answer(message: str, context: dict[str, Any]) -> str:
    """Your model goes here; this one only says what Engram recalled for the message."""
    recalled = [item["text"] for item in context["items"] if item["text"] != message]
    if not recalled:
        return "Noted."
    return f"Noted. I remember: {recalled[0][:200]}"


async def ask_until_recalled(engram: EngramClient, query: str, user: str, session: str, said: str) -> dict[str, Any]:
    """Ask until the context holds ``said``: the workers ingest turns asynchronously, so a question
    asked right after a turn was published may come before it is in memory."""
    deadline = time.monotonic() + 30
    while True:
        context = await engram.ask(query, user_id=user, session_id=session, token_budget=800)
        if any(said in item["text"] for item in context["items"]) or time.monotonic() > deadline:
            return context
        await asyncio.sleep(0.5)


def show(context: dict[str, Any]) -> None:
    print(f"compiled context {context['request_id']} for {context['user_id']}: {context['query']!r}")
    print(f"route {context['route']}, {len(context['items'])} items, {context['total_tokens']} tokens")
    for item in context["items"]:
        cites = ", ".join(f"{ref['topic']}/{ref['partition']}@{ref['offset']}" for ref in item["provenance"])
        text = item["text"].replace("\n", "\n    ")  # a facts block spans lines
        print(f"- [{item['kind']}] {item['score']:.3f} {text}")
        print(f"    provenance: {cites or '(none)'}")


async def main(user: str) -> None:
    session = f"agent-app-{uuid.uuid4().hex[:8]}"
    async with EngramClient(client_config()) as engram:
        index = 0
        for message in MESSAGES:
            await engram.publish_turn(user_id=user, session_id=session, turn_index=index, content=message)
            context = await engram.ask(message, user_id=user, session_id=session)
            reply = answer(message, context)
            print(f"user: {message}\nagent: {reply}")
            await engram.publish_turn(
                user_id=user, session_id=session, turn_index=index + 1, content=reply, role="assistant"
            )
            index += 2
        show(await ask_until_recalled(engram, QUESTION, user, session, MESSAGES[0]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--user", default="ada", help="the user the agent talks to (default: ada)")
    asyncio.run(main(parser.parse_args().user))
