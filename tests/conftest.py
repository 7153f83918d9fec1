"""Shared fixtures.  LibreOffice is required: a missing soffice fails, it never skips."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def soffice() -> str:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if not exe:
        pytest.fail("LibreOffice is required for this test (run scripts/test.sh, which installs it)")
    return exe
