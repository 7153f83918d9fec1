"""inference-ledger: the domain library (ledger, plan, catalogs, engines, what-if) and its CLI."""

import importlib
import importlib.util

__version__ = "0.1.0"

#: The only place the SMTP password comes from (read by inference_ledger.mail; here so `email --help` loads no mail code).
PASSWORD_ENV = "INFERENCE_LEDGER_SMTP_PASSWORD"



def __getattr__(name: str):
    """The checked ledger functions (``inference_ledger.kv_bytes`` ...: :mod:`inference_ledger.functions`), loaded on
    first use so that the CLI does not import them.  A submodule's name is left to the import system."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    functions = importlib.import_module(f"{__name__}.functions").FUNCTIONS
    if name in functions:
        return functions[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
