"""Email a plan workbook: compose the message and send it over SMTP (standard library only).

The message (RFC 5322, MIME per RFC 2045-2049) is ``multipart/mixed``: a
``multipart/alternative`` body, plain text first and HTML second (RFC 2046 sec. 5.1.4: the
last alternative is the preferred one), then the workbook as
``application/vnd.openxmlformats-officedocument.spreadsheetml.sheet`` (the IANA type of
ECMA-376 .xlsx). The body states the verdict, so a reader has the answer without opening
the file.

Sending follows RFC 5321 with the ESMTP extensions a relay uses: STARTTLS (RFC 3207) or
implicit TLS (RFC 8314), AUTH (RFC 4954) and SIZE (RFC 1870). Security rules:

* TLS certificates and host names are verified (``ssl.create_default_context``; a private CA
  via ``cafile`` or the ``SSL_CERT_FILE`` environment variable). Skipping verification
  (``insecure``) is allowed only for a loopback server.
* A password is sent only over TLS, and is never part of a message, an error or a repr.
* The envelope is all-or-nothing: when the server refuses any recipient, or the message is
  larger than its SIZE limit, the transaction is reset and nobody gets a copy.

Every failure raises :class:`MailError` with one line that says what happened and where.
"""

from __future__ import annotations

import datetime as _dt
import html
import ipaddress
import os
import re
import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP as SMTP_POLICY
from email.utils import formatdate, getaddresses, make_msgid, parseaddr
from pathlib import Path
from typing import Any, Mapping, Sequence

from inference_ledger import PASSWORD_ENV
from inference_ledger.graph import verdict
from inference_ledger.core.args import echo
from inference_ledger.core.files import write_bytes
from inference_ledger.core.unit_registry import count_text, money_text, value_in

XLSX_TYPE = ("application", "vnd.openxmlformats-officedocument.spreadsheetml.sheet")
SECURITY_MODES = ("plain", "starttls", "ssl")


class MailError(Exception):
    """A failed compose or send step; str() is one line, free of secrets."""


# --- the verdict: what the body and subject say --------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """The plan's answer in the words of the message: model, GPU and count, fit, TPOT, $/month."""

    model: str
    gpu: str
    gpus_per_replica: int  # GPUs per model copy (TP x PP x DP attention)
    gpus_for_qps: int  # GPUs the target QPS needs (replicas x GPUs per replica): the Plan sheet's one bill
    verdict: int  # the plan's verdict code (inference_ledger.graph.verdict)
    tpot_seconds: float
    monthly_cost_qps: float
    #: The plan's answer in sentences (inference_ledger.graph.summary: what `plan` prints first and the Summary sheet
    #: says)
    sentences: tuple[str, ...] = ()
    concurrency_used: int = 0  # sequences per replica the bill is sized at (inference_ledger.graph.concurrency)
    concurrency_reason: str = ""  # which limit chose it, in words ("TPOT target", "requested", ...)
    currency_symbol: str = "$"  # the build's currency (inference_ledger.finance.finance_options): amounts as the workbook shows them
    price_placeholder: bool = False  # the hourly price is the catalog's placeholder (catalogs.prices): every bill rests on it

    @classmethod
    def from_plan(cls, plan: Mapping[str, Any], model: str, gpu: str, sentences: Sequence[str] = (),
                  currency_symbol: str = "$", price_placeholder: bool = False) -> "Verdict":
        """From the values of ``inference_ledger.graph.plan.evaluate`` and the catalog ids of the model and GPU."""
        return cls(model, gpu, int(plan["gpus_per_replica"]), int(plan["gpus_for_qps"]), int(plan["verdict"]),
                   float(plan["tpot_seconds"]), float(plan["monthly_cost_qps"]), tuple(sentences),
                   int(plan.get("concurrency_used", 0)), str(plan.get("concurrency_reason_words", "")),
                   currency_symbol, price_placeholder)

    def monthly(self) -> str:
        """The monthly cost in the build's currency: '$12,345/month', '€12,345/month', and whether its price is a
        placeholder (the subject says so, not only the body)."""
        amount = money_text(self.monthly_cost_qps, "$/month", self.currency_symbol)
        return f"{amount} at a placeholder price" if self.price_placeholder else amount

    @property
    def fits(self) -> bool:
        """A replica starts: a plan that does not fit has no fleet and no bill (the summary's sentences say so)."""
        return self.verdict != verdict.DOES_NOT_FIT

    def tpot(self) -> str:
        return f"{value_in(self.tpot_seconds, 'ms'):,.1f} ms"

    def rows(self) -> list[tuple[str, str]]:
        none = "none: the plan does not fit"
        return [
            ("Model", self.model),
            ("GPU", f"{self.gpus_per_replica} x {self.gpu} per model copy"),
            ("GPUs for the target QPS", f"{self.gpus_for_qps:,}" if self.fits else none),
            *([("Concurrency per model copy", f"{count_text(self.concurrency_used, 'sequences')} (chosen by: "
                f"{self.concurrency_reason})")]
              if self.concurrency_used and self.fits else []),
            ("Verdict", verdict.words_of(self.verdict)),
            ("TPOT", f"{self.tpot()} per output token" if self.fits else f"{self.tpot()} for one sequence"),
            ("Monthly cost for the target QPS", self.monthly() if self.fits else none),
        ]

    def headline(self) -> str:
        said = f"{self.model} on {self.gpus_per_replica} x {self.gpu}: {verdict.words_of(self.verdict)}"
        return f"{said}, TPOT {self.tpot()}, {self.monthly()}" if self.fits else said

    def text(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        table = "\n".join(f"  {k + ':':<{width + 1}} {v}" for k, v in self.rows())
        said = "".join(f"{s}\n" for s in self.sentences)
        return (f"Inference plan: {self.headline()}.\n\n{said}{chr(10) if said else ''}{table}\n\n"
                "The attached workbook holds the memory, compute and bandwidth ledgers; it recalculates\n"
                "in Excel or LibreOffice when you change an input.\n")

    def html(self) -> str:
        e = html.escape
        cells = "\n".join(f'<tr><th align="left">{e(k)}</th><td>{e(v)}</td></tr>' for k, v in self.rows())
        said = "".join(f"<p>{e(s)}</p>\n" for s in self.sentences)
        return (f"<html><body>\n<p>Inference plan: <b>{e(self.headline())}</b>.</p>\n{said}"
                f'<table cellpadding="4">\n{cells}\n</table>\n'
                "<p>The attached workbook holds the memory, compute and bandwidth ledgers; it recalculates "
                "in Excel or LibreOffice when you change an input.</p>\n</body></html>\n")


def attachment_name(model: str, gpu: str, day: _dt.date) -> str:
    """A file name a reader recognises: ``llama-3.1-70b_h100-sxm_2026-11-30.xlsx``."""
    return f"{_slug(model)}_{_slug(gpu)}_{day.isoformat()}.xlsx"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "plan"


# --- composing ------------------------------------------------------------------------------


def parse_addresses(text: str, option: str) -> list[str]:
    """A comma-separated list of addresses ('a@x.com, Name <b@y.org>'); ValueError names the option."""
    if "\r" in text or "\n" in text:
        raise ValueError(f"{option} must not contain line breaks")
    out = []
    for name, addr in getaddresses([text]):
        if not re.fullmatch(r"[^@\s<>]+@[^@\s<>]+\.[^@\s<>]+", addr):
            item = next((t.strip() for t in text.split(",") if addr and addr in t), name or addr or text)
            raise ValueError(f"{option}: {echo(item)} is not an email address")
        out.append(addr)
    if not out:
        raise ValueError(f"{option} needs at least one email address")
    return out


def compose(workbook: str | os.PathLike, verdict: Verdict, *, sender: str, to: Sequence[str],
            cc: Sequence[str] = (), subject: str | None = None, filename: str | None = None) -> EmailMessage:
    """The message: verdict as text and HTML, the workbook attached as .xlsx.

    Header values with a line break raise ValueError (the email policy's guard against header injection)."""
    msg = EmailMessage(policy=SMTP_POLICY)
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Subject"] = subject or f"Inference plan: {verdict.headline()}"
    msg["Date"] = formatdate(localtime=True)
    msg["Message-ID"] = make_msgid(domain=parseaddr(sender)[1].rpartition("@")[2] or None)
    msg.set_content(verdict.text())
    msg.add_alternative(verdict.html(), subtype="html")
    path = Path(workbook)
    msg.add_attachment(path.read_bytes(), maintype=XLSX_TYPE[0], subtype=XLSX_TYPE[1],
                       filename=filename or path.name)
    return msg


def recipients(msg: EmailMessage) -> list[str]:
    """Envelope recipients: every To and Cc address."""
    return [addr for _, addr in getaddresses(msg.get_all("To", []) + msg.get_all("Cc", []))]


def write_eml(msg: EmailMessage, path: str | os.PathLike) -> Path:
    """Write the message as it would be sent (CRLF lines) to an .eml file, atomically (inference_ledger.core.files)."""
    return write_bytes(path, msg.as_bytes(policy=SMTP_POLICY), "eml", option="--eml").resolve()


# --- sending --------------------------------------------------------------------------------


def parse_hostport(text: str) -> tuple[str, int]:
    """'host:port' or '[::1]:port' -> (host, port); ValueError on anything else."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)|([^:\[\]\s]+):(\d+)", text.strip())
    if not m:
        raise ValueError(f"--smtp must be HOST:PORT, e.g. smtp.example.com:587 (got {text!r})")
    host, port = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if not 0 < int(port) < 65536:
        raise ValueError(f"--smtp port must be 1-65535 (got {port})")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Server:
    """Where and how to send. Holds no secret: the password is passed to :func:`send` alone."""

    host: str
    port: int
    security: str = "plain"  # plain | starttls (RFC 3207) | ssl (implicit TLS, RFC 8314)
    user: str | None = None
    timeout: float = 30.0  # seconds, for connecting and for each server reply
    cafile: str | None = None
    insecure: bool = False  # skip certificate checks: loopback test servers only

    def __post_init__(self):
        if self.security not in SECURITY_MODES:
            raise ValueError(f"security must be one of {', '.join(SECURITY_MODES)} (got {self.security!r})")
        if not self.timeout > 0:
            raise ValueError(f"--timeout must be > 0 seconds (got {self.timeout:g})")
        if self.user and self.security == "plain":
            raise ValueError("--user sends a password: add --starttls or --ssl (never in clear text)")
        if self.insecure and self.security == "plain":
            raise ValueError("--insecure applies only with --starttls or --ssl")
        if self.insecure and not is_loopback(self.host):
            raise ValueError(f"--insecure is only for a local test server (127.0.0.1, ::1, localhost), "
                             f"not {self.host}")

    @property
    def where(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def tls_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.cafile)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


def password_from_env(server: Server, environ: Mapping[str, str] = os.environ) -> str | None:
    """The SMTP password, from the environment only (never an argument: argv is visible to every user)."""
    if not server.user:
        return None
    password = environ.get(PASSWORD_ENV)
    if not password:
        raise MailError(f"--user {server.user} needs the password in the environment variable {PASSWORD_ENV}")
    return password


def send(msg: EmailMessage, server: Server, password: str | None = None) -> list[str]:
    """Send msg; return its recipients. Raise MailError (one line, password redacted) on failure."""
    if server.user and not password:
        raise MailError(f"--user {server.user} needs a password ({PASSWORD_ENV})")
    rcpts = recipients(msg)
    sender = parseaddr(msg["From"])[1]
    data = msg.as_bytes(policy=SMTP_POLICY)
    try:
        with _connect(server) as smtp:
            if server.security == "starttls":
                smtp.ehlo()
                if not smtp.has_extn("starttls"):
                    raise MailError(f"{server.where} does not offer STARTTLS; refusing to continue unencrypted "
                                    "(use --ssl for an implicit-TLS port, or drop --starttls for a local relay)")
                smtp.starttls(context=server.tls_context())
            smtp.ehlo()
            if server.user:
                if not smtp.has_extn("auth"):
                    raise MailError(f"{server.where} does not offer AUTH; cannot log in as {server.user}")
                smtp.login(server.user, password)
            _transact(smtp, server, sender, rcpts, data)
    except MailError as e:
        raise MailError(_redact(str(e), password)) from None
    except Exception as e:  # noqa: BLE001 - every failure becomes one line
        raise MailError(_redact(_describe(e, server), password)) from None
    return rcpts


def _connect(server: Server) -> smtplib.SMTP:
    if server.security == "ssl":
        return smtplib.SMTP_SSL(server.host, server.port, timeout=server.timeout, context=server.tls_context())
    return smtplib.SMTP(server.host, server.port, timeout=server.timeout)


def _transact(smtp: smtplib.SMTP, server: Server, sender: str, rcpts: list[str], data: bytes) -> None:
    """MAIL, every RCPT, then DATA only if all were accepted (else RSET: nobody gets a copy)."""
    options = []
    if smtp.has_extn("size"):
        limit = int(smtp.esmtp_features["size"] or 0)  # RFC 1870: 0 means no fixed limit
        if limit and len(data) > limit:
            smtp.rset()
            raise MailError(f"the message is {len(data):,} bytes, over the {limit:,}-byte limit (SIZE) of "
                            f"{server.where}")
        options.append(f"SIZE={len(data)}")
    code, resp = smtp.mail(sender, options)
    if code != 250:
        smtp.rset()
        raise smtplib.SMTPSenderRefused(code, resp, sender)
    refused = []
    for rcpt in rcpts:
        code, resp = smtp.rcpt(rcpt)
        if code not in (250, 251):
            refused.append(f"{rcpt} ({code} {_text(resp)})")
    if refused:
        smtp.rset()
        raise MailError(f"{server.where} refused recipient {', '.join(refused)}; sent to nobody")
    code, resp = smtp.data(data)
    if code != 250:
        raise smtplib.SMTPDataError(code, resp)


def _describe(e: Exception, server: Server) -> str:
    """One line for a failed send; the order matters (most SMTP and TLS errors are OSErrors)."""
    at = server.where
    if isinstance(e, TimeoutError) or isinstance(e.__context__, TimeoutError):  # smtplib wraps read timeouts
        return f"no answer from {at} within {server.timeout:g} s (--timeout)"
    if isinstance(e, smtplib.SMTPAuthenticationError):
        return f"{at} rejected the credentials of {server.user} ({e.smtp_code} {_text(e.smtp_error)})"
    if isinstance(e, (smtplib.SMTPSenderRefused, smtplib.SMTPDataError)) and e.smtp_code == 552:
        return f"{at} refused the message as too large ({e.smtp_code} {_text(e.smtp_error)})"
    if isinstance(e, smtplib.SMTPSenderRefused):
        return f"{at} refused the sender {e.sender} ({e.smtp_code} {_text(e.smtp_error)})"
    if isinstance(e, smtplib.SMTPResponseException):
        return f"{at} refused the message ({e.smtp_code} {_text(e.smtp_error)})"
    if isinstance(e, smtplib.SMTPServerDisconnected):
        return f"{at} closed the connection unexpectedly ({e or 'no reason given'})"
    if isinstance(e, smtplib.SMTPException):
        return f"SMTP error with {at}: {e}"
    if isinstance(e, ssl.SSLCertVerificationError):
        return (f"TLS certificate of {at} could not be verified ({e.verify_message}); "
                "give its CA with --cafile or SSL_CERT_FILE")
    if isinstance(e, ssl.SSLError):
        return f"TLS handshake with {at} failed ({e.reason or e})"
    if isinstance(e, ConnectionRefusedError):
        return f"connection to {at} refused (is an SMTP server listening there?)"
    if isinstance(e, socket.gaierror):
        return f"cannot resolve the SMTP host {server.host} ({e.strerror})"
    if isinstance(e, OSError):
        return f"network error with {at}: {e.strerror or e}"
    return f"sending via {at} failed: {type(e).__name__}: {e}"


def _text(resp: bytes | str) -> str:
    s = resp.decode("utf-8", "replace") if isinstance(resp, bytes) else str(resp)
    return " ".join(s.split())


def _redact(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text
