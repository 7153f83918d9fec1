"""Property: whatever a user gives, the answer is a valid plan (or value) or one clear refusal, within 15 s.

* ``plan`` through the real entry point, in process: random models, GPUs, layouts, model overrides and
  workloads, valid or not.  Exit 0 prints a plan whose verdict is one of the verdict codes; anything else is
  exit 1 or 2 with one line ``inference-ledger: error: ...``; never a traceback, never a hang.
* The Excel functions: any cell values (numbers, NaN, inf, bools, text, blanks, huge ids) give a 2-D result
  whose every cell is a finite number or one error line (no exception).
* The Python functions: a finite number, or ValueError with exactly the words the Excel cell shows.

Example counts stay modest: the machine has two cores.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import signal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import udfs
from inference_ledger.graph import verdict
from inference_ledger.core.args import LedgerInputError
from udfs import _xl, excel

from test_cli_rules import cli

LIMIT_S = 15
SETTINGS = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def within(seconds: int = LIMIT_S):
    """Fail (instead of hanging) when the block takes longer than ``seconds``."""
    def expired(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


NUMBER_TEXT = st.one_of(
    st.integers(-3, 300).map(str),
    st.sampled_from(["0", "1", "2", "3", "4", "8", "16", "1e9", "-1", "1.5", "nan", "inf", "", " ", "x", "1,,2",
                     "80GB", "90%", "1e400", "0x10"]),
)
OPTIONS = {
    "--model": st.sampled_from(["llama-3.1-70b", "llama-3.1-8b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b",
                                "qwen3-235b-a22b", "llama-9000", "", "x" * 300]),
    "--gpu": st.sampled_from(["h100", "h200", "l4", "mi300x", "b200", "h800", "nope", ""]),
    "--tp": NUMBER_TEXT, "--pp": NUMBER_TEXT, "--ep": NUMBER_TEXT, "--dp-attention": NUMBER_TEXT,
    "--concurrency": NUMBER_TEXT, "--context": NUMBER_TEXT, "--output-tokens": NUMBER_TEXT,
    "--experts-per-token": NUMBER_TEXT, "--num-experts": NUMBER_TEXT, "--moe-layers": NUMBER_TEXT,
    "--kv-heads": NUMBER_TEXT, "--layers": NUMBER_TEXT,
    "--weight-dtype": st.sampled_from(["bf16", "fp8", "int4", "mxfp4", "native", "fp4x", ""]),
    "--kv-dtype": st.sampled_from(["bf16", "fp8", "int4", "int4-kv", ""]),
    "--gpu-memory-utilization": st.sampled_from(["0.9", "90%", "0", "1.5", "nan"]),
    "--prefill-tp": NUMBER_TEXT,
}
FLAGS = st.lists(st.sampled_from(["--disaggregated"]), max_size=1)


@given(chosen=st.dictionaries(st.sampled_from(sorted(OPTIONS)), st.none(), min_size=1, max_size=6).flatmap(
    lambda keys: st.fixed_dictionaries({k: OPTIONS[k] for k in keys})), flags=FLAGS)
@settings(SETTINGS, max_examples=40)
def test_plan_answers_or_refuses_in_one_line(chosen, flags):
    argv = ["plan", "--json", *flags, *(a for k, v in chosen.items() for a in (k, v))]
    with within():
        code, out, err = cli(*argv)
    assert "Traceback" not in out + err, argv
    if code == 0:
        doc = json.loads(out)
        if "--disaggregated" not in flags:
            assert doc["verdict"] in range(len(verdict.WORDS))
            assert doc["verdict_words"] == verdict.words_of(doc["verdict"])
        return
    assert code in (1, 2), (argv, code, err)
    assert err.count("\n") == 1 and err.startswith("inference-ledger: error: "), (argv, err)
    assert len(err) < 1000, (argv, len(err))   # a 300-character id is echoed cut, never whole twice over


CELL = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**20, 10**20), st.booleans(), st.none(),
    st.sampled_from(["", "80", "x", "1e9", "nan", "#N/A", "x" * 5000]),
)
CELLS = st.one_of(CELL, st.lists(st.lists(CELL, min_size=1, max_size=3), min_size=1, max_size=3))
FUNCTIONS = [f for f in excel.FUNCTIONS]


def _signature(fn):
    return list(inspect.signature(fn).parameters)


@given(data=st.data(), fn=st.sampled_from(FUNCTIONS))
@settings(SETTINGS, max_examples=120)
def test_excel_functions_give_numbers_or_error_cells(data, fn):
    args = [data.draw(CELLS, label=name) for name in _signature(fn)]
    with within():
        out = fn(*args)
    assert isinstance(out, list) and all(isinstance(row, list) for row in out)
    for row in out:
        for cell in row:
            if isinstance(cell, str) and cell.startswith("#"):
                assert "\n" not in cell and len(cell) <= len("#VALUE! ") + _xl.MESSAGE_LIMIT, cell[:200]
                assert cell.count("x" * 101) == 0
            elif isinstance(cell, float):
                assert math.isfinite(cell)
            else:
                assert isinstance(cell, (str, int, float)), (fn.__name__, cell)


#: (Python function, its Excel function): the same formula (a plan line's Excel function, e.g. FITS, is another one)
PYTHON = sorted((fn.__name__, excel_name) for fn, excel_name, _ in excel.REGISTRY)
SCALAR = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**16, 10**16), st.booleans(),
                   st.sampled_from(["80", "", "x"]), st.sampled_from([0, 1, 2, 8, 128, 4096, 70e9, 3.35e12, 0.5]))


@given(data=st.data(), names=st.sampled_from(PYTHON))
@settings(SETTINGS, max_examples=150)
def test_python_functions_agree_with_the_excel_functions(data, names):
    name, excel_name = names
    fn = getattr(udfs, name)
    args = [data.draw(SCALAR, label=p) for p in _signature(fn)]
    (cell,) = getattr(excel, excel_name)(*args)[0]
    with within():
        try:
            value = fn(*args)
        except ValueError as e:
            assert isinstance(e, LedgerInputError)
            message = str(e)
            assert "\n" not in message
            # the Excel cell shows the same words (a blank Excel cell means its default; Python's None is refused)
            if not any(a is None or a == "" for a in args):
                assert cell == f"#VALUE! {message}", (args, cell, message)
            return
    assert math.isfinite(value)
    assert cell == value or (isinstance(cell, float) and math.isclose(cell, value, rel_tol=1e-12)), (args, cell, value)
