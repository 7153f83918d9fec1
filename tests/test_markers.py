"""The fast loop stays fast: a test that starts LibreOffice (or Gnumeric, or poppler) without the ``libreoffice``
marker fails and says so (tests/conftest.py), so ``pytest -m "not libreoffice"`` never starts one."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def test_an_unmarked_test_that_starts_libreoffice_fails_and_a_marked_one_may(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_office='''
        import shutil
        import pytest

        def test_asks_for_the_fixture(soffice):
            pass

        def test_looks_soffice_up():
            shutil.which("soffice")

        def test_looks_gnumeric_up():
            shutil.which("ssconvert")

        def test_looks_python_up():
            assert shutil.which("python3")

        def test_starts_pdftoppm_by_its_path():
            import subprocess
            subprocess.run(["/usr/bin/pdftoppm", "-v"], capture_output=True)

        @pytest.mark.libreoffice
        def test_marked_may_look_it_up():
            shutil.which("soffice")
            shutil.which("pdftoppm")
    ''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=3, errors=1)
    result.stdout.fnmatch_lines(["*test_asks_for_the_fixture*not marked: add @pytest.mark.libreoffice*"])
    result.stdout.fnmatch_lines(["*test_looks_gnumeric_up*not marked*looked up ssconvert*"])
    result.stdout.fnmatch_lines(["*test_starts_pdftoppm_by_its_path*not marked*started pdftoppm*"])
    fast = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not libreoffice", "-k", "python or marked")
    fast.assert_outcomes(passed=1, deselected=5)
