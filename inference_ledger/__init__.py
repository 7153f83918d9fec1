"""inference-ledger: the domain library and its CLI, in layers that read bottom-up.

A module imports only from its own layer or the layers below it (``tests/test_architecture.py``); the sub-packages,
ground floor first, are :data:`LAYERS`.  ``docs/architecture.md`` says what lives in each.
"""

import importlib
import importlib.util
import os
import sys

__version__ = "0.1.0"

#: The only place the SMTP password comes from (read by inference_ledger.io.mail; here so `email --help` loads no mail
#: code).
PASSWORD_ENV = "INFERENCE_LEDGER_SMTP_PASSWORD"

#: The library's layers, bottom-up: (layer name, its sub-packages).  The expression core; the topic formulas with
#: their lines; the catalogs and data readers; the plan graph; file and mail I/O; validation; the adapters.
LAYERS = (
    ("core", ("core",)),
    ("formulas", ("formulas",)),
    ("catalogs", ("catalogs",)),
    ("graph", ("graph",)),
    ("io", ("io",)),
    ("validation", ("validation",)),
    ("adapters", ("cli", "workbook")),
)

# The workbook's sheet modules are the repository's top-level folder workbook/ (the design card) and are installed
# as inference_ledger.workbook (pyproject.toml's package-dir), never as a top-level name of their own.  Run from a
# source checkout (PYTHONPATH at the repository), inference_ledger/workbook/ does not exist: map the name onto it.
_CARD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "workbook")
if not os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workbook")) and os.path.isdir(_CARD) \
        and f"{__name__}.workbook" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(f"{__name__}.workbook", os.path.join(_CARD, "__init__.py"),
                                                   submodule_search_locations=[_CARD])
    workbook = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(workbook)


def __getattr__(name: str):
    """The checked ledger functions (``inference_ledger.kv_bytes`` ...: :mod:`inference_ledger.formulas.functions`),
    loaded on first use so that the CLI does not import them.  A submodule's name is left to the import system."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    functions = importlib.import_module(f"{__name__}.formulas.functions").FUNCTIONS
    if name in functions:
        return functions[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
