"""Build-time and CI tools (not installed with Engram)."""
