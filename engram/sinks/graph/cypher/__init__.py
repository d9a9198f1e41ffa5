"""Cypher builders, one module per entity kind. Each function returns a query string; values are
always ``$params``; labels, types and bounds are validated (`sinks.graph.identifiers`) before
they are interpolated. The subset used runs on Neo4j 5 and FalkorDB 4 alike: no
``IF NOT EXISTS``, constraints, ``EXISTS {}``, ``=~``, ``elementId()`` or temporal functions;
times are epoch-millisecond ints.
"""
