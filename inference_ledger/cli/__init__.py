"""The `inference-ledger` command: a thin adapter over the library (plan, recommend, sweep) and workbook (builder).

Errors are one line and a non-zero exit, the same rule in every command:

* exit 2: the input is wrong: a usage mistake, an option value out of range, an unknown id,
  a file name with the wrong extension, a bad field or cell in a file you gave;
* exit 1: the action failed: a file cannot be read or written (or must not be replaced),
  the network or the mail server failed, or a check the command runs did not pass.

Never a traceback.  Each command's module is imported only when that command runs, so
``plan`` never loads the workbook writer (openpyxl) or the mail/TLS modules.
"""

from __future__ import annotations

import importlib
import sys

import click

from inference_ledger import __version__

#: name -> the line the command list shows and the command's own help begins with (inference_ledger.cli.options.Command
#: puts it there: each command's docstring goes on from it).  The command is ``<name>_cmd`` of
#: ``inference_ledger.cli.<name>`` (the catalog listings': of :data:`MODULE_OF`).
COMMANDS: dict[str, str] = {
    "plan": "The memory, compute and bandwidth ledgers of one deployment.",
    "models": "The model catalog, one line each (inference_ledger/data/models/: drop a config.json there to add one).",
    "gpus": "The GPU catalog, one line each (inference_ledger/data/gpus.csv: edit prices or append rows there).",
    "engines": "The serving engines by version, one line each (inference_ledger/data/engines.csv: what --engine takes).",
    "build": "Write the workbook: Plan, the three ledgers, Scenarios, Checks and the catalogs.",
    "email": "Email the plan workbook, with its verdict in the body, to colleagues.",
    "sweep": "Every combination of the lists, one row each, with a fit verdict.",
    "recommend": "Deployments that meet the QPS, TTFT and TPOT targets, cheapest per month first.",
    "calibrate": "Fit the plan to your benchmark results and engine logs; write a profile for --profile.",
    "validate": "Compare predictions with measured deployments (weights, KV cache, engine start, TPOT).",
}
#: Commands that live in a module of another name.
MODULE_OF = {"models": "catalog", "gpus": "catalog", "engines": "catalog"}


class LazyGroup(click.Group):
    """Subcommands imported on first use; the command list shows the one-line help of :data:`COMMANDS`."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"inference_ledger.cli.{MODULE_OF.get(name, name)}")
        return getattr(module, f"{name}_cmd")

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl(list(COMMANDS.items()))


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="inference-ledger")
def main() -> None:
    """How many GPUs, how fast, what QPS: the memory, compute and bandwidth ledgers of LLM inference.

    Exit codes: 0 done; 2 wrong input (option, value, unknown id, a bad field or cell in a
    file you gave); 1 the action failed (a file cannot be read or written, the network).
    """


def error_line(e: BaseException) -> tuple[int, str]:
    """(exit code, one-line message) for an exception that ends a command."""
    if isinstance(e, click.UsageError):
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        return 2, f"{e.format_message()}{hint}"
    if isinstance(e, click.ClickException):
        return e.exit_code, e.format_message()
    if isinstance(e, OSError):
        from inference_ledger.core.files import FileFailed, reason

        if isinstance(e, FileFailed) or not (e.strerror or e.errno):
            return 1, str(e)
        where = f"{e.filename}: " if e.filename else ""
        return 1, f"{where}{reason(e)}"
    if isinstance(e, KeyError):
        return 2, str(e.args[0]) if e.args else "unknown key"
    if isinstance(e, ValueError):
        return 2, str(e)
    raise e


def run(argv: list[str] | None = None) -> int:
    """Console-script entry point: one-line errors; exit 2 for wrong input, 1 for a failed action."""
    try:
        rv = main.main(args=argv, prog_name="inference-ledger", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.Abort:
        click.echo("inference-ledger: aborted", err=True)
        sys.exit(1)
    except (click.ClickException, OSError, ValueError, KeyError) as e:
        code, line = error_line(e)
        click.echo(f"inference-ledger: error: {' '.join(line.split())}", err=True)
        sys.exit(code)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    run()
