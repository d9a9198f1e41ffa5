"""Engram, the event-sourced streaming memory pipeline for LLM agents: the server's one import package.

Its rooms are subpackages (ARCHITECTURE.md, "The rooms"): ``engram.schemas`` (contracts and codec),
``engram.processors`` (pure logic), ``engram.sinks`` (storage), ``engram.streams`` (the Faust app
and the CLI), ``engram.infra`` (starting servers) and ``engram.benchmarks``. One top-level name
keeps an agent app's own ``schemas`` or ``streams`` module from shadowing them, or the reverse;
agent apps themselves install the light client, ``engram_client``."""
