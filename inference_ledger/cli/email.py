"""`inference-ledger email`: build the plan workbook, save it, and mail it with the verdict.

Order of work, so that nothing is lost: check every option, build and save the workbook
(atomically, at -o or in the current directory), then compose, then send (or write --eml).
A failed send says why in one line and where the saved workbook is.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import click

from inference_ledger import PASSWORD_ENV
from inference_ledger.core import files
from inference_ledger.graph import summary
from inference_ledger.cli.build import BUILD_PARAMETERS, build_options
from inference_ledger.cli.options import Command, check_output, load_profile, write_options
from inference_ledger.formulas.finance import finance_options


def fresh_name(path: Path) -> Path:
    """``path``, or ``stem-2.xlsx``, ``stem-3.xlsx`` ... when it exists: a default name never replaces a file."""
    candidate, n = path, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


@click.command("email", cls=Command)
@click.option("--to", "to", required=True, metavar="ADDR[,ADDR...]", help="Recipients, comma-separated.")
@click.option("--cc", metavar="ADDR[,ADDR...]", help="Copy recipients, comma-separated.")
@click.option("--from", "sender", metavar="ADDR", help="Sender address (default: --user when it is an address).")
@click.option("--subject", help="Subject line (default: the verdict).")
@click.option("--smtp", metavar="HOST:PORT", help="SMTP server, e.g. smtp.example.com:587.")
@click.option("--starttls", is_flag=True, help="Upgrade to TLS with STARTTLS (port 587); refuse a server without it.")
@click.option("--ssl", "implicit_tls", is_flag=True, help="Implicit TLS from the first byte (port 465).")
@click.option("--user", help=f"Log in as this user; the password comes ONLY from ${PASSWORD_ENV}.")
@click.option("--cafile", type=click.Path(exists=True, dir_okay=False),
              help="Trust this CA bundle (PEM) for the server certificate; SSL_CERT_FILE works too "
                   f"({files.limit_words('CA bundle')}).")
@click.option("--insecure", is_flag=True, help="Do not verify the TLS certificate. Loopback test servers only.")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=30.0, show_default=True,
              help="Seconds to wait for the connection and for each server reply.")
@click.option("--eml", metavar="FILE.eml", help="Write the message to this .eml file instead of sending "
              "(not with --smtp: one or the other).")
@click.option("-o", "--output", metavar="FILE.xlsx",
              help="Where to save the workbook (default: the attachment name in the current directory; a file of "
                   "that name already there is never replaced: the new one gets -2, -3 ... before .xlsx).")
@build_options
@write_options
def email_cmd(to, cc, sender, subject, smtp, starttls, implicit_tls, user, cafile, insecure, timeout, eml,
              output, **build):
    """\b
    inference-ledger email --to cfo@example.com --smtp smtp.example.com:587 --starttls \\
        --user planner@example.com --model llama-3.1-70b --gpu h100-sxm --tp 4
    inference-ledger email --to cfo@example.com --from me@example.com --eml plan.eml
    """
    from inference_ledger.io import mail  # smtplib, ssl and email load only for this command
    from inference_ledger.workbook.build import build_workbook, resolve_build

    if eml is not None:
        check_output(eml, "eml", "--eml")
    if output is not None:
        check_output(output, "xlsx", "-o")
    try:
        recipients = mail.parse_addresses(to, "--to")
        copies = mail.parse_addresses(cc, "--cc") if cc else []
        sender = sender or (user if user and "@" in user else None)
        if not sender:
            raise ValueError("--from is required (or a --user that is an email address)")
        sender = mail.parse_addresses(sender, "--from")[0]
        if subject and ("\r" in subject or "\n" in subject):
            raise ValueError("--subject must not contain line breaks")
        if starttls and implicit_tls:
            raise ValueError("--starttls and --ssl exclude each other")
        if cafile is not None:
            files.check_input(cafile, "CA bundle")   # a FIFO or a device would block the TLS library's read
        server = password = None
        if eml is not None and smtp:
            raise ValueError("give --eml FILE (write the message) or --smtp HOST:PORT (send it), not both")
        if eml is None:
            if not smtp:
                raise ValueError("give --smtp HOST:PORT to send, or --eml FILE to write the message")
            host, port = mail.parse_hostport(smtp)
            server = mail.Server(host, port, "starttls" if starttls else "ssl" if implicit_tls else "plain",
                                 user, timeout, cafile, insecure)
            password = mail.password_from_env(server)
    except (ValueError, mail.MailError) as e:
        raise click.UsageError(str(e)) from None
    if server is not None and server.insecure:
        click.secho(f"WARNING: --insecure: the TLS certificate of {server.where} is NOT verified. "
                    "Use this only with a local test server.", err=True, fg="red", bold=True)

    choice = {k: v for k, v in build.items() if k not in BUILD_PARAMETERS}
    _, _, symbol = finance_options(None, build.get("currency"), build.get("currency_symbol"))
    build["profile"] = load_profile(build.get("profile"))
    chosen = resolve_build(**{k: choice.pop(k) for k in ("model", "gpu", "weight_dtype", "kv_dtype", "config",
                                                         "context", "engine") if k in choice}, numbers=choice)
    model, gpu = chosen.model, chosen.gpu
    name = mail.attachment_name(model.id, gpu.id, dt.date.today())
    saved, plan = build_workbook(output if output is not None else fresh_name(Path.cwd() / name), **build)
    saved = Path(saved).resolve()
    named = (model.name or model.id) + summary.overridden_words(chosen.describe())
    said = summary.quantities(plan, chosen.describe())
    verdict = mail.Verdict.from_plan(plan, named, gpu.name or gpu.id, sentences=summary.sentences_of(said, symbol),
                                     currency_symbol=symbol, price_placeholder=not said["price_listed"])
    msg = mail.compose(saved, verdict, sender=sender, to=recipients, cc=copies, subject=subject, filename=name)

    if server is None:
        click.echo(f"wrote the message to {mail.write_eml(msg, eml)}; the workbook is saved at {saved}")
        return
    try:
        sent_to = mail.send(msg, server, password)
    except mail.MailError as e:
        raise click.ClickException(f"not sent: {e}. The workbook is saved at {saved}") from None
    click.echo(f"sent {name} to {', '.join(sent_to)} via {server.where}; the workbook is saved at {saved}")
