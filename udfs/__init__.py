"""inference-ledger: memory, compute and bandwidth ledgers of LLM inference.

The pure formulas (no xlwings here): ``from udfs import kv_bytes, weights_bytes,
flops_request, decode_tpot``.  The Excel functions live in :mod:`udfs.excel`.
"""

from inference_ledger import __version__  # noqa: F401
from inference_ledger.ledger import *  # noqa: F401,F403
from inference_ledger.ledger import decode_tpot, flops_request, kv_bytes, weights_bytes  # noqa: F401
