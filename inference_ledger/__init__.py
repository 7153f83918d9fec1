"""inference-ledger: the domain library (ledger, plan, catalogs, engines, what-if) and its CLI."""

__version__ = "0.1.0"

#: The only place the SMTP password comes from (read by inference_ledger.mail; here so `email --help` loads no mail code).
PASSWORD_ENV = "INFERENCE_LEDGER_SMTP_PASSWORD"
