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
import io
import os
import pickle
import signal
import zipfile
from typing import Iterable, Optional
from xml.etree import ElementTree as ET

import pytest

from ooxml import SML

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
        if key not in _RENDERS and key in _AHEAD:
            _RENDERS.update(_AHEAD.pop(key).wait(key))
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




class _Ahead:
    """Renders of plain options made by a forked child, in order, each into a file of its own as it is done; the
    test that asks for one waits for that file (or renders it itself if the child ended without it)."""

    def __init__(self, jobs: list, folder):
        from inference_ledger.workbook import build

        self.paths = {key: folder / f"{k}.pickle" for k, (key, _, _) in enumerate(jobs)}
        r, w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover (child)
            try:
                os.close(r)
                for key, ctx, template in jobs:
                    data = build.render_workbook(ctx, (), template=template)
                    tmp = self.paths[key].with_suffix(".part")
                    tmp.write_bytes(pickle.dumps((data, ctx.values)))
                    os.replace(tmp, self.paths[key])
                    os.write(w, b".")
            finally:
                os._exit(0)
        os.close(w)
        self.done = os.fdopen(r, "rb", buffering=0)   # a byte per render the child has written

    def wait(self, key) -> dict:
        """{render key: (bytes, values)} of this key once the child has written it ({} when it ended without)."""
        path = self.paths[key]
        while not path.exists() and self.done.read(1):
            pass
        return {key: pickle.loads(path.read_bytes())} if path.exists() else {}

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        self.done.close()


#: render key -> the child rendering it ahead of the tests (render_ahead)
_AHEAD: dict = {}
_CHILDREN: list[_Ahead] = []


def render_ahead(option_sets, folder) -> None:
    """Start a child that renders each (options, template) of ``option_sets`` not rendered yet, in order: the
    memoised renders of those options then wait for its files instead of rendering (conftest.py calls this with
    the RENDERS_AHEAD of the modules in the session, in their order)."""
    from inference_ledger.workbook import build

    jobs = []
    for options, template in option_sets:
        key = _render_key(options)
        if key is None:
            continue
        ctx = build.make_context(**options)
        full = (key, bool(template), ctx.build_date)
        if full not in _RENDERS and full not in _AHEAD and full not in [j[0] for j in jobs]:
            jobs.append((full, ctx, bool(template)))
    if jobs:
        child = _Ahead(jobs, folder)
        _CHILDREN.append(child)
        _AHEAD.update({key: child for key, _, _ in jobs})


def stop_rendering_ahead() -> None:
    for child in _CHILDREN:
        child.stop()
    _CHILDREN.clear()
    _AHEAD.clear()


def options_of(argv) -> dict:
    """The render options of a command line of plan options (``--model deepseek-v3 --tp 8``): names with
    underscores, numbers as floats (as the CLI passes them)."""
    out = {}
    for flag, value in zip(argv[::2], argv[1::2]):
        try:
            value = float(value)
        except ValueError:
            pass
        out[flag.lstrip("-").replace("-", "_")] = value
    return out


_OFFICE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def only_sheets(path, sheets) -> io.BytesIO:
    """The package at ``path`` with every worksheet not named in ``sheets`` emptied (no cells, no formatting): what
    openpyxl then parses is the named sheets' XML (the Kernels sheet alone is two thirds of the workbook's)."""
    with zipfile.ZipFile(path) as z:
        book = ET.fromstring(z.read("xl/workbook.xml"))
        targets = {r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
                   if r.tag == f"{{{_PACKAGE_REL}}}Relationship"}
        part = {s.get("name"): "xl/" + targets[s.get(f"{{{_OFFICE_REL}}}id")].lstrip("/").removeprefix("xl/")
                for s in book.iter(f"{{{SML}}}sheet")}
        unknown = set(sheets) - set(part)
        if unknown:
            raise KeyError(f"no sheet {sorted(unknown)} in {path}")
        empty = {part[name] for name in part if name not in sheets}
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zo:
            for name in z.namelist():
                zo.writestr(name, f'<worksheet xmlns="{SML}"><sheetData/></worksheet>' if name in empty
                            else z.read(name))
    out.seek(0)
    return out


@functools.lru_cache(maxsize=32)
def _opened(path: str, mtime_ns: int, size: int, data_only: bool, sheets: Optional[frozenset]):
    from openpyxl import load_workbook

    return load_workbook(path if sheets is None else only_sheets(path, sheets), data_only=data_only)


def opened(path, data_only: bool = False, sheets: Optional[Iterable[str]] = None):
    """openpyxl's workbook of a file, loaded once while the file is unchanged (a file's formulas or cached values
    are a function of its bytes): read it, never change it.  ``sheets``: the only sheets the test reads (each
    other sheet is there, empty, so a test that reads one it did not name finds no cells); every sheet when None."""
    st = os.stat(path)
    return _opened(str(path), st.st_mtime_ns, st.st_size, data_only, None if sheets is None else frozenset(sheets))


def named_cell(wb, name: str):
    """The cell a workbook-level defined name points at."""
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")]


def typed_into_overrides(built, edits: dict, folder):
    """The workbook at ``built`` with each value of ``edits`` typed into the Plan's Override cell of the input it
    names (two columns right of its value), saved and recalculated by LibreOffice: the recalculated book, values only."""
    from openpyxl import load_workbook

    from inference_ledger.workbook.recalc import recalculate

    wb = load_workbook(built)
    for name, value in edits.items():
        cell = named_cell(wb, name)
        assert cell.value.startswith("=IF(ISBLANK(") and cell.offset(column=2).coordinate in cell.value, name
        cell.offset(column=2).value = value
    edited = folder / "what-if.xlsx"
    wb.save(edited)
    return load_workbook(recalculate(edited, folder / "out"), data_only=True)
