"""The README's Python examples run and print what the README says."""

import doctest
from pathlib import Path


def test_readme_examples():
    readme = Path(__file__).resolve().parent.parent / "README.md"
    result = doctest.testfile(str(readme), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 4
    assert result.failed == 0
