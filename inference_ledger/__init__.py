"""Command-line and delivery adapters of inference-ledger (the formulas live in udfs)."""

from udfs import __version__  # noqa: F401

#: The only place the SMTP password comes from (read by inference_ledger.mail; here so `email --help` loads no mail code).
PASSWORD_ENV = "INFERENCE_LEDGER_SMTP_PASSWORD"
