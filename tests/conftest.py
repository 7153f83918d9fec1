"""Shared fixtures.  LibreOffice is required: a missing soffice fails, it never skips.

Every test that starts LibreOffice (the ``soffice`` fixture, ``inference_ledger.workbook.recalc``), Gnumeric or poppler
is marked ``libreoffice``, so ``pytest -m "not libreoffice"`` is the fast loop.  An unmarked test that asks for
``soffice``, or looks one of those programs up or starts one (subprocess) while it sets up or runs, fails and says
to mark it (a program a child process starts is that child's: the test that started the child is not checked).

openpyxl writes XML with lxml when it can import it and with the standard library
otherwise (``openpyxl.xml.LXML``, decided at import).  The suite runs with lxml (a test
dependency); ``IL_XML_BACKEND=stdlib`` hides lxml before anything imports openpyxl, and
tests/test_xml_backends.py builds workbooks that way in a subprocess and checks that both
backends write the same bytes, so both are exercised by every run.

A test whose work is a child process (a build with lxml hidden, say) can have it started as soon as the session
knows the test will run (``EARLY_CHILDREN`` in its module, ``early_child`` fixture): the child then runs on the
machine's other core beside the tests before it, and the test waits for its result.

The costly pure steps run once per session and are shared read-only: ``workbooks`` (a built workbook per option
set), ``cached_renders`` (in-process builds, e.g. through the CLI, reuse a render of the same options:
tests/renders.py) and ``accuracy_study`` / ``shared_study`` (the leave-one-source-out study of the shipped rows).
Both start on the other core as soon as the session knows its tests: the study in a forked child (the modules that
need it run last), and the renders a module lists in ``RENDERS_AHEAD`` (its plain option sets) in another, in the
modules' order; the test that asks for one waits for it.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.abc
import os
import shutil
import subprocess
import sys

import pytest

XML_BACKEND = os.environ.get("IL_XML_BACKEND", "lxml")


class _NoLxml(importlib.abc.MetaPathFinder):
    """Import hook that makes lxml look absent (as on a machine without it)."""

    def find_spec(self, name, path=None, target=None):
        if name == "lxml" or name.startswith("lxml."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: IL_XML_BACKEND=stdlib)", name=name)
        return None


if XML_BACKEND == "stdlib":
    if "openpyxl" in sys.modules:
        raise RuntimeError("IL_XML_BACKEND=stdlib: openpyxl was imported before lxml could be hidden")
    sys.meta_path.insert(0, _NoLxml())
elif XML_BACKEND != "lxml":
    raise RuntimeError(f"IL_XML_BACKEND must be lxml or stdlib, not {XML_BACKEND!r}")


@pytest.fixture(scope="session")
def xml_backend() -> str:
    """The XML backend openpyxl must be using in this run."""
    return XML_BACKEND


@pytest.fixture(scope="session")
def soffice() -> str:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if not exe:
        pytest.fail("LibreOffice is required for this test (run scripts/test.sh, which installs it)")
    return exe


#: programs only tests marked ``libreoffice`` may start (they are looked up with shutil.which before they start)
OFFICE_PROGRAMS = ("soffice", "libreoffice", "ssconvert", "gnumeric", "pdftoppm", "pdftotext", "pdfinfo")


def _unmarked(item) -> str:
    return f"{item.nodeid} starts LibreOffice, Gnumeric or poppler but is not marked: add @pytest.mark.libreoffice"


def _program(args) -> str:
    """The program a subprocess.Popen call starts (its first argument, or the command line's first word)."""
    first = args if isinstance(args, (str, bytes, os.PathLike)) else (list(args) or [""])[0]
    first = os.fsdecode(first)
    return os.path.basename(first.split()[0] if first.strip() else first)


@contextlib.contextmanager
def _office_refused(item):
    real, real_popen = shutil.which, subprocess.Popen.__init__

    def which(cmd, *args, **kwargs):
        if os.path.basename(str(cmd)) in OFFICE_PROGRAMS:
            pytest.fail(f"{_unmarked(item)} (it looked up {cmd})", pytrace=False)
        return real(cmd, *args, **kwargs)

    def popen(self, args, *rest, **kwargs):   # a program started by its path, without looking it up
        if _program(args) in OFFICE_PROGRAMS:
            pytest.fail(f"{_unmarked(item)} (it started {_program(args)})", pytrace=False)
        real_popen(self, args, *rest, **kwargs)

    shutil.which, subprocess.Popen.__init__ = which, popen
    try:
        yield
    finally:
        shutil.which, subprocess.Popen.__init__ = real, real_popen


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("libreoffice"):
        return (yield)
    if "soffice" in item.fixturenames:
        pytest.fail(f"{_unmarked(item)} (it uses the soffice fixture)", pytrace=False)
    with _office_refused(item):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if item.get_closest_marker("libreoffice"):
        return (yield)
    with _office_refused(item):
        return (yield)


@pytest.fixture
def cached_renders():
    """Builds in this test (in process: build_workbook, or the CLI's build and email) share the session's renders."""
    from renders import memoised_renders

    with memoised_renders():
        yield


@pytest.fixture(scope="session")
def workbooks(tmp_path_factory):
    """``workbooks(name=".xlsx", **options) -> (path, values)``: a workbook built once per session (SOURCE_DATE_EPOCH
    unset: dated by the catalogs, as templates/ are) and shared read-only (the file is made read-only; values are a
    copy).  A name ending in .xltx builds the template."""
    from renders import memoised_renders
    from inference_ledger.workbook.build import build_workbook

    folder = tmp_path_factory.mktemp("workbooks")
    built: dict = {}

    def get(name: str = ".xlsx", **options):
        key = (name, tuple(sorted(options.items())))
        if key not in built:
            path = folder / f"{len(built)}{name}"
            with pytest.MonkeyPatch.context() as mp, memoised_renders():
                mp.delenv("SOURCE_DATE_EPOCH", raising=False)
                path, values = build_workbook(path, **options)
            path.chmod(0o444)
            built[key] = (path, values)
        path, values = built[key]
        return path, dict(values)

    return get


#: session fixtures whose value a forked child computes as soon as the session knows a test needs it: name -> how
def _study():
    from inference_ledger.validation import accuracy

    return accuracy.study()


_PREFETCHED = {"accuracy_study": _study}
_PREFETCH: dict = {}


@pytest.fixture(scope="session")
def accuracy_study():
    """The leave-one-source-out study of the shipped load rows (every parameter), fitted once per session: by a child
    forked when the session's tests are known (it runs on the machine's other core beside the tests before the first
    that needs it), else here."""
    child = _PREFETCH.pop("accuracy_study", None)
    got = child.result() if child is not None else None
    return got if got is not None else _study()


@pytest.fixture
def shared_study(accuracy_study, monkeypatch):
    """In this test ``accuracy.study()`` of the shipped rows and parameters (what `validate` runs) is the session's
    study (a pure function of the shipped data files); other rows or parameters fit afresh."""
    from inference_ledger.validation import accuracy

    real = accuracy.study

    def study(rows=None, params=None):
        return accuracy_study if rows is None and params is None else real(rows, params)

    monkeypatch.setattr(accuracy, "study", study)


class _EarlyChild:
    """A child process started when the session's tests are known; its output goes to files (never a full pipe)."""

    def __init__(self, folder, argv: list[str], env: dict):
        self.folder, self.argv = folder, argv
        self._out, self._err = open(folder / "stdout", "w+"), open(folder / "stderr", "w+")
        self.proc = subprocess.Popen(argv, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), env=env,
                                     stdout=self._out, stderr=self._err, text=True)

    def result(self, timeout: float = 600) -> subprocess.CompletedProcess:
        code = self.proc.wait(timeout)
        for f in (self._out, self._err):
            f.flush()
            f.seek(0)
        return subprocess.CompletedProcess(self.argv, code, self._out.read(), self._err.read())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        self._err.close()


_EARLY: dict[tuple[str, str], _EarlyChild] = {}

#: gc.set_threshold for the session: a young collection per 50,000 allocations (the interpreter's default is 700)
GC_THRESHOLDS = (50_000, 50, 100)


def pytest_collection_modifyitems(session, config, items):
    """The modules whose tests need a _PREFETCHED fixture run last (in their order), so that its child has the other
    tests' time to compute it."""
    late = {item.module for item in items if _PREFETCHED.keys() & set(getattr(item, "fixturenames", ()))}
    items.sort(key=lambda item: getattr(item, "module", None) in late)


def pytest_collection_finish(session):
    """Start each child process named in EARLY_CHILDREN by a module with a test in this run that waits for one, and
    a forked child for each of _PREFETCHED that a test of this run needs.

    First the objects collection made (modules, test items, loaded catalogs) are moved out of the garbage collector's
    sight (``gc.freeze``) and a full collection waits for more allocations (``GC_THRESHOLDS``): the suite builds many
    workbooks of short-lived objects, and each full collection otherwise walks the whole session's heap again (the fast
    loop ran 135 s here with the interpreter's defaults, 101 s with these). The forked children share the frozen
    pages rather than copying them as a collection touches them."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ()) if name in _PREFETCHED}
    if needed - set(_PREFETCH):
        from children import Child

        for name in sorted(needed - set(_PREFETCH)):
            _PREFETCH[name] = Child(_PREFETCHED[name])
    modules = list(dict.fromkeys(getattr(item, "module", None) for item in session.items))
    ahead = [(dict(options), template) for m in modules for options, template in getattr(m, "RENDERS_AHEAD", ())]
    if ahead:
        from renders import render_ahead

        render_ahead(ahead, session.config._tmp_path_factory.mktemp("renders-ahead"))
    for item in session.items:
        module = getattr(item, "module", None)
        if "early_child" not in getattr(item, "fixturenames", ()):
            continue
        for name, make in getattr(module, "EARLY_CHILDREN", {}).items():
            key = (module.__name__, name)
            if key not in _EARLY:
                folder = session.config._tmp_path_factory.mktemp(f"early-{name}")
                argv, env = make(folder)
                _EARLY[key] = _EarlyChild(folder, argv, env)


def pytest_sessionfinish(session):
    for child in _EARLY.values():
        child.close()
    _EARLY.clear()
    for child in _PREFETCH.values():
        child.stop()
    _PREFETCH.clear()
    if "renders" in sys.modules:
        sys.modules["renders"].stop_rendering_ahead()


@pytest.fixture
def early_child(request):
    """``early_child(name) -> (CompletedProcess, folder)``: the result of this module's EARLY_CHILDREN[name], started
    with the session (or now, when the session started without it) and waited for here."""
    def get(name: str):
        key = (request.module.__name__, name)
        if key not in _EARLY:
            folder = request.config._tmp_path_factory.mktemp(f"early-{name}")
            _EARLY[key] = _EarlyChild(folder, *request.module.EARLY_CHILDREN[name](folder))
        child = _EARLY[key]
        return child.result(), child.folder

    return get
