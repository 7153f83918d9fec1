"""Each distinct workbook rendered once per test session.

Rendering a workbook is the suite's costliest step (seconds of CPU each) and it is a pure function of the build's
options and the build date: the same options give the same bytes (tests/test_workbook.py::
test_reproducible_bytes_and_build_date and tests/test_templates.py prove it against fresh renders, and neither
uses this memo for the renders it compares).  Tests of what a command does around the workbook (the writer's
policy, mail, exit codes, the verdict printed) and tests that only read a workbook share one rendering per option
set.  Only renders of plain options are memoised: a config.json, a scenarios CSV, a calibration profile or an extra
sheet builder always renders afresh.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os

import pytest

#: options whose value names a file (its contents, not its name, decide the workbook): never memoised
_FILE_OPTIONS = ("config", "scenarios", "profile")
_RENDERS: dict = {}


#: options make_context fills with the default choice when they are not given (the CLI passes some of them)
_DEFAULTED = ("model", "gpu", "kv_dtype", "engine")


def _render_key(options: dict):
    from inference_ledger.workbook.cells import DEFAULT_CHOICE

    given = {k: v for k, v in options.items() if v is not None}   # None means "not given" (make_context)
    if any(k in _FILE_OPTIONS for k in given) or not all(isinstance(v, (str, int, float, bool)) for v in given.values()):
        return None
    # the default given by name renders what leaving it out renders (`build` passes --engine and --kv-dtype)
    given = {k: v for k, v in given.items() if not (k in _DEFAULTED and v == DEFAULT_CHOICE[k])}
    return tuple(sorted(given.items()))


@contextlib.contextmanager
def memoised_renders():
    """Within: inference_ledger.workbook.build renders each distinct (options, template, build date) once per session."""
    from inference_ledger.workbook import build

    real_context, real_render = build.make_context, build.render_workbook

    def make_context(**options):
        ctx = real_context(**options)
        ctx._render_key = _render_key(options)
        return ctx

    def render_workbook(ctx, extra_sheets=(), template=False):
        extra_sheets = tuple(extra_sheets)
        key = getattr(ctx, "_render_key", None)
        if key is None or extra_sheets:
            return real_render(ctx, extra_sheets, template=template)
        key = (key, bool(template), ctx.build_date)
        if key not in _RENDERS:
            data = real_render(ctx, (), template=template)
            _RENDERS[key] = (data, copy.deepcopy(ctx.values))
        data, values = _RENDERS[key]
        ctx.values.clear()
        ctx.values.update(copy.deepcopy(values))   # what the sheets added to the plan's values as they were written
        return data

    mp = pytest.MonkeyPatch()
    mp.setattr(build, "make_context", make_context)
    mp.setattr(build, "render_workbook", render_workbook)
    try:
        yield
    finally:
        mp.undo()




@functools.lru_cache(maxsize=16)
def _opened(path: str, mtime_ns: int, size: int, data_only: bool):
    from openpyxl import load_workbook

    return load_workbook(path, data_only=data_only)


def opened(path, data_only: bool = False):
    """openpyxl's workbook of a file, loaded once while the file is unchanged (a file's formulas or cached values
    are a function of its bytes): read it, never change it."""
    st = os.stat(path)
    return _opened(str(path), st.st_mtime_ns, st.st_size, data_only)
