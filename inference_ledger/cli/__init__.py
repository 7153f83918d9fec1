"""The `inference-ledger` command: a thin adapter over udfs (formulas) and workbook (builder).

Errors are one line and a non-zero exit: 2 for a wrong option or usage, 1 for bad
input values or a failed action.  Never a traceback.
"""

from __future__ import annotations

import sys

import click

from inference_ledger import __version__
from inference_ledger.args import LedgerInputError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="inference-ledger")
def main() -> None:
    """How many GPUs, how fast, what QPS: the memory, compute and bandwidth ledgers of LLM inference."""


# --- subcommands (each module owns one command) -------------------------------------
# registrations: keep one line per command
from inference_ledger.cli.plan import plan_cmd; main.add_command(plan_cmd)  # noqa: E402,E702
from inference_ledger.cli.catalog import models_cmd; main.add_command(models_cmd)  # noqa: E402,E702
from inference_ledger.cli.catalog import gpus_cmd; main.add_command(gpus_cmd)  # noqa: E402,E702
from inference_ledger.cli.build import build_cmd; main.add_command(build_cmd)  # noqa: E402,E702
from inference_ledger.cli.email import email_cmd; main.add_command(email_cmd)  # noqa: E402,E702
from inference_ledger.cli.sweep import sweep_cmd; main.add_command(sweep_cmd)  # noqa: E402,E702
from inference_ledger.cli.recommend import recommend_cmd; main.add_command(recommend_cmd)  # noqa: E402,E702
from inference_ledger.cli.validate import validate_cmd; main.add_command(validate_cmd)  # noqa: E402,E702
# ----------------------------------------------------------------------------------------


def run(argv: list[str] | None = None) -> int:
    """Console-script entry point: one-line errors, exit 2 for usage, 1 for bad values."""
    try:
        rv = main.main(args=argv, prog_name="inference-ledger", standalone_mode=False)
    except click.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        click.echo(f"inference-ledger: error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.Abort:
        click.echo("inference-ledger: aborted", err=True)
        sys.exit(1)
    except click.ClickException as e:
        click.echo(f"inference-ledger: error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except LedgerInputError as e:
        click.echo(f"inference-ledger: error: {e}", err=True)
        sys.exit(1)
    except (OSError, ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        click.echo(f"inference-ledger: error: {msg}", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    run()
