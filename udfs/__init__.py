"""The Excel-facing package of inference-ledger (the user-defined functions of the design card).

``from udfs import kv_bytes, weights_bytes, flops_request, decode_tpot`` keeps the seed's four, and every other
ledger and what-if formula is here under its own name: the checked functions of
:mod:`inference_ledger.formulas.functions`, which refuse a bad argument with ValueError in the words the Excel cell
shows.  The worksheet functions are :mod:`udfs.excel` (xlwings), its cell-by-cell calling convention :mod:`udfs._xl`.  Nothing here needs click or
openpyxl, so xlwings Lite imports it with numpy and xlwings alone.
"""

from inference_ledger import __version__  # noqa: F401
from inference_ledger.formulas.functions import *  # noqa: F401,F403
from inference_ledger.formulas.functions import __all__  # noqa: F401
from inference_ledger.formulas.functions import decode_tpot, flops_request, kv_bytes, weights_bytes  # noqa: F401
