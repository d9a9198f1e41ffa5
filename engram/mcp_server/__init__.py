"""`engram mcp`: the MCP server agents reach memory through (ARCHITECTURE.md, "The rooms").

A thin layer: asking and publishing go through the client SDK (`engram_client`), facts through the
worker's facts API, graph queries through the broker as `engram query` sends them, and the time
hierarchy from the event log as `engram toc` reads it. Every call acts with one principal's token,
so the worker's gate decides what the agent may read and write. Needs the ``mcp`` package (the
``mcp`` extra) and the SDK (``pip install -e client``).
"""
