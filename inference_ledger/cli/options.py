"""Options every command that writes a file shares: --force and --follow-symlinks (see inference_ledger.files)."""

from __future__ import annotations

import functools
from typing import Callable

import click

from inference_ledger import files


def write_options(f: Callable) -> Callable:
    """Add --force and --follow-symlinks; the command's writers follow them (inference_ledger.files.policy)."""
    @functools.wraps(f)
    def wrapper(*args, force: bool, follow_symlinks: bool, **kwargs):
        with files.policy(force=force, follow_symlinks=follow_symlinks):
            return f(*args, **kwargs)

    wrapper = click.option("--follow-symlinks", is_flag=True,
                           help="When an output is a symbolic link, replace the file it points to "
                                "(default: refuse).")(wrapper)
    return click.option("--force", is_flag=True,
                        help="Replace an output file even when it is read-only (default: refuse).")(wrapper)


def check_output(path: str, fmt: str, option: str = "--output") -> None:
    """Refuse a wrong output name or a target that must not be replaced, before any work is done."""
    files.check_target(path, fmt, option)
