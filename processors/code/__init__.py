"""The Code Brain: tree-sitter code graph (seed 000, section 4.2)."""
