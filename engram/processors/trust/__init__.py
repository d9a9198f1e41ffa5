"""Trust (seed 000 §4.3): who asks (`tokens`), what they may read and write (`relations`), over
layer instances (`instances`). Pure: no I/O; the worker feeds it tokens and relationship events."""
