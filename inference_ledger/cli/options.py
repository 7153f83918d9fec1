"""Options every command that writes a file shares: --force and --follow-symlinks (see inference_ledger.files)."""

from __future__ import annotations

import functools
from typing import Callable, Optional

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


def profile_option(f: Callable) -> Callable:
    """Add --profile: plan inputs fitted by `inference-ledger calibrate` (inference_ledger.calibrate_profile.read_profile)."""
    return click.option("--profile", metavar="PROFILE.csv", type=click.Path(exists=True, dir_okay=False),
                        help="A profile written by `inference-ledger calibrate`: its fitted plan inputs replace the "
                             "defaults (options you give still win), and the output says it is calibrated from your "
                             "measurements and names their files.")(f)


def load_profile(path: Optional[str]):
    """The profile at ``path`` (None without one); a bad row is one line naming the file and the row (exit 2)."""
    if path is None:
        return None
    from inference_ledger.calibrate_profile import read_profile

    return read_profile(path)


def calibrated_line(profile) -> str:
    """The words every command prints under a calibrated plan."""
    d = profile.deployment
    where = ", ".join(f"{k} {d[k]}" for k in ("model", "gpu", "tp", "engine") if d.get(k))
    return (f"calibrated from your measurements: {profile.path} ({', '.join(f'{k} {v:.4g}' for k, v in profile.values.items())}; "
            f"fitted {profile.date or 'undated'} on {where or 'the given deployment'} from "
            f"{', '.join(profile.sources) or 'files not named'})")
