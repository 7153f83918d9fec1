"""Command-line and delivery adapters of inference-ledger (the formulas live in udfs)."""

from udfs import __version__  # noqa: F401
