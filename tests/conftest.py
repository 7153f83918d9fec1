"""Shared fixtures.  LibreOffice is required: a missing soffice fails, it never skips.

openpyxl writes XML with lxml when it can import it and with the standard library
otherwise (``openpyxl.xml.LXML``, decided at import).  The suite runs with lxml (a test
dependency); ``IL_XML_BACKEND=stdlib`` hides lxml before anything imports openpyxl, and
tests/test_xml_backends.py runs the workbook tests that way in a subprocess, so both
backends are exercised by every run.
"""

from __future__ import annotations

import importlib.abc
import os
import shutil
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
