"""servedeck: a terminal operations console for LLM serving on multi-GPU servers."""

__version__ = "0.1.0"
