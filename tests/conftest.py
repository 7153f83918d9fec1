"""Shared fixtures.  LibreOffice is required: a missing soffice fails, it never skips."""

from __future__ import annotations

import os
import shutil

import pytest

# As the CLI does: openpyxl writes the same bytes whether or not lxml is installed (templates/ are those
# bytes). tests/test_text_stays_text.py runs its lxml leg with OPENPYXL_LXML=True in a child process.
os.environ.setdefault("OPENPYXL_LXML", "False")


@pytest.fixture(scope="session")
def soffice() -> str:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if not exe:
        pytest.fail("LibreOffice is required for this test (run scripts/test.sh, which installs it)")
    return exe
