"""What every command shares: one value per option (:class:`Command`), and for commands that write a file
--force and --follow-symlinks (see inference_ledger.core.files)."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Optional

import click

from inference_ledger.catalogs import engines
from inference_ledger.cli import COMMANDS
from inference_ledger.core import files

#: Said in every command's --help (the epilog of :class:`Command`).
ONCE = ("Each option is given once: a repeated option (--tp 4 --tp 8) is refused rather than the last one "
        "silently winning; list options take comma-separated values.")


def engine_words() -> str:
    """What --engine takes, in words: the families (each the current release) and where the version ids are listed."""
    families = ", ".join(i for i in engines.engine_ids() if i.isalpha())
    return (f"{families} (the current release), or a version such as vllm-0.7 or sglang-0.4 "
            "(`inference-ledger engines` lists every id)")


class EngineChoice(click.Choice):
    """``--engine``: an id or alias of inference_ledger/data/engines.csv, case-insensitive.  Its help shows ID and
    the families rather than every alias, and a wrong one is refused in one line saying what it takes."""

    def __init__(self) -> None:
        super().__init__(engines.engine_names(), case_sensitive=False)

    def get_metavar(self, *args, **kwargs) -> str:
        return "ID"

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            self.fail(f"{value!r} is not an engine; it takes {engine_words()}", param, ctx)


def engine_option(help: str) -> Callable:
    """The --engine option of plan, sweep and recommend: :class:`EngineChoice`, default the current vLLM."""
    return click.option("--engine", type=EngineChoice(), default=engines.DEFAULT_ENGINE, show_default=True,
                        help=f"{help}: {engine_words()}.")


class Command(click.Command):
    """A click command that refuses an option given twice (click's own convention keeps the last one silently); its
    help is its line of :data:`inference_ledger.cli.COMMANDS`, then its docstring."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("epilog", ONCE)
        name = kwargs.get("name", args[0] if args else None)
        if name in COMMANDS:
            rest = inspect.cleandoc(kwargs.get("help") or "")
            kwargs["help"] = COMMANDS[name] + (f"\n\n{rest}" if rest else "")
        super().__init__(*args, **kwargs)

    def make_parser(self, ctx: click.Context):
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_once(args):
            opts, rest, order = parse(args=args)
            seen: set[str] = set()
            for param in order:
                if not isinstance(param, click.Option) or param.multiple or param.count:
                    continue
                if param.name in seen:
                    flag = max(param.opts, key=len)
                    raise click.UsageError(f"{flag} is given more than once: give it once "
                                           "(a list option takes comma-separated values)", ctx)
                seen.add(param.name)
            return opts, rest, order

        parser.parse_args = parse_once
        return parser


def write_options(f: Callable) -> Callable:
    """Add --force and --follow-symlinks; the command's writers follow them (inference_ledger.core.files.policy)."""
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
    """Add --profile: plan inputs fitted by `inference-ledger calibrate`
    (inference_ledger.validation.calibrate_profile.read_profile)."""
    return click.option("--profile", metavar="PROFILE.csv", type=click.Path(exists=True, dir_okay=False),
                        help="A profile written by `inference-ledger calibrate`: its fitted plan inputs replace the "
                             "defaults (options you give still win), and the output says it is calibrated from your "
                             "measurements and names their files.")(f)


def load_profile(path: Optional[str]):
    """The profile at ``path`` (None without one); a bad row is one line naming the file and the row (exit 2)."""
    if path is None:
        return None
    from inference_ledger.validation.calibrate_profile import read_profile

    return read_profile(path)


def calibrated_line(profile) -> str:
    """The words every command prints under a calibrated plan."""
    d = profile.deployment
    where = ", ".join(f"{k} {d[k]}" for k in ("model", "gpu", "tp", "engine") if d.get(k))
    return (f"calibrated from your measurements: {profile.path} ({', '.join(f'{k} {v:.4g}' for k, v in profile.values.items())}; "
            f"fitted {profile.date or 'undated'} on {where or 'the given deployment'} from "
            f"{', '.join(profile.sources) or 'files not named'})")
