"""inference-ledger: the domain library (ledger, plan, catalogs, engines, what-if) and its CLI."""

__version__ = "0.1.0"
