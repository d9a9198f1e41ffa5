"""The context compiler: PPR + decay + knapsack + topological order (seed 001)."""

from engram.processors.compiler.compiler import ContextCompiler, PinnedSource
from engram.processors.compiler.config import BALANCED, FAST, PRESETS, THOROUGH, Bounds, CompilerConfig

__all__ = ["BALANCED", "FAST", "PRESETS", "THOROUGH", "Bounds", "CompilerConfig", "ContextCompiler", "PinnedSource"]
