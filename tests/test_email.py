"""`inference-ledger email` against a real SMTP server (aiosmtpd) on 127.0.0.1.

Every server is started by its test on a free loopback port and stopped in teardown; TLS
certificates come from a throw-away CA (trustme). The received bytes are parsed back: the
body states the verdict, the attachment opens in openpyxl with cached values, and neither
the output nor the message holds the password.
"""

from __future__ import annotations

import contextlib
import email
import functools
import email.policy
import io
import os
import re
import socket
import ssl
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from inference_ledger.io import mail

from renders import memoised_renders, named_cell as named, only_sheets, options_of
from test_cli_rules import cli as run_cli

PASSWORD = "s3cret-Pa55word-9f2c"
USER = "planner"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


# --- a real SMTP server on loopback ---------------------------------------------------------


class Inbox:
    """aiosmtpd handler: keeps what it receives, refuses the recipients it is told to."""

    def __init__(self, refuse=(), data_reply=None):
        self.received: list[tuple[str, list[str], bytes]] = []
        self.refuse = set(refuse)
        self.data_reply = data_reply

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return f"550 5.1.1 <{address}>: mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_reply:
            return self.data_reply
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK: queued"


def check_login(server, session, envelope, mechanism, auth_data):
    return AuthResult(success=auth_data.login == USER.encode() and auth_data.password == PASSWORD.encode(),
                      handled=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def smtp_server(handler, **kw):
    """aiosmtpd on 127.0.0.1:<free port>, ready within 10 s, stopped on exit."""
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=10, **kw)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    """A throw-away CA, its PEM file, and a server context with a cert for 127.0.0.1."""
    authority = trustme.CA()
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    return pem, ctx


def tiny_workbook(path: Path) -> Path:
    wb = openpyxl.Workbook()
    wb.active["A1"] = 42
    wb.save(path)
    return path


VERDICT = mail.Verdict("llama-3.1-70b", "h100-sxm", gpus_per_replica=4, gpus_for_qps=8, verdict=3,
                       tpot_seconds=0.0234, monthly_cost_qps=14600.0)


def message(tmp_path, to=("cfo@example.com",), cc=()):
    return mail.compose(tiny_workbook(tmp_path / "w.xlsx"), VERDICT, sender="planner@example.com",
                        to=list(to), cc=list(cc), filename="llama-3.1-70b_h100-sxm_2026-11-30.xlsx")


# --- composing ------------------------------------------------------------------------------


def test_message_states_verdict_in_text_and_html_and_attaches_xlsx(tmp_path):
    msg = email.message_from_bytes(message(tmp_path, cc=["pm@example.com"]).as_bytes(),
                                   policy=email.policy.default)
    assert msg.get_content_type() == "multipart/mixed"
    assert msg["To"] == "cfo@example.com" and msg["Cc"] == "pm@example.com"
    assert msg["Subject"] == "Inference plan: llama-3.1-70b on 4 x h100-sxm: fits, meets targets, TPOT 23.4 ms, $14,600/month"
    text = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    for body in (text, html):
        assert "llama-3.1-70b" in body and "h100-sxm" in body
        assert "23.4 ms" in body and "$14,600/month" in body
    assert re.search(r"^  Verdict: +fits, meets targets\r?$", text, re.M)
    assert "<th align=\"left\">Verdict</th><td>fits, meets targets</td>" in html
    assert "<th align=\"left\">GPUs for the target QPS</th><td>8</td>" in html
    (att,) = list(msg.iter_attachments())
    assert att.get_content_type() == XLSX
    assert att.get_filename() == "llama-3.1-70b_h100-sxm_2026-11-30.xlsx"
    assert openpyxl.load_workbook(io.BytesIO(att.get_content()))["Sheet"]["A1"].value == 42


def test_verdict_says_no_when_it_does_not_fit():
    """A plan that does not fit has no fleet and no bill: the subject and the figures said '$20,252,120/month' and
    '34713' GPUs under sentences saying 'No fleet' and 'No bill'."""
    v = mail.Verdict.from_plan({"gpus_per_replica": 1.0, "gpus_for_qps": 3.0, "verdict": 0.0, "tpot_seconds": 3.3698,
                                "monthly_cost_qps": 5475.0, "concurrency_used": 1.0}, "llama-3.1-405b", "l4")
    assert v.headline() == "llama-3.1-405b on 1 x l4: does not fit"
    rows = dict(v.rows())
    assert rows["Verdict"] == "does not fit" and "Concurrency per model copy" not in rows
    assert rows["GPUs for the target QPS"] == rows["Monthly cost for the target QPS"] == "none: the plan does not fit"
    assert rows["TPOT"] == "3,369.8 ms for one sequence"
    assert "5,475" not in v.text() + v.html()


def test_a_fitting_plans_figures_are_written_with_separators_and_counted_nouns():
    v = mail.Verdict.from_plan({"gpus_per_replica": 8.0, "gpus_for_qps": 34713.0, "verdict": 2.0,
                                "tpot_seconds": 1.2345, "monthly_cost_qps": 2e7, "concurrency_used": 1.0,
                                "concurrency_reason_words": "TPOT target"}, "llama-3.1-405b", "l4")
    rows = dict(v.rows())
    assert rows["GPUs for the target QPS"] == "34,713" and rows["TPOT"] == "1,234.5 ms per output token"
    assert rows["Concurrency per model copy"] == "1 sequence (chosen by: TPOT target)"
    assert v.headline() == "llama-3.1-405b on 8 x l4: fits, misses targets, TPOT 1,234.5 ms, $20,000,000/month"


def test_attachment_name_has_model_gpu_and_date():
    import datetime as dt
    assert mail.attachment_name("Llama 3.1/70B", "H100 SXM", dt.date(2026, 11, 30)) == \
        "llama-3.1-70b_h100-sxm_2026-11-30.xlsx"


@pytest.mark.parametrize("text, error", [
    ("cfo", "'cfo' is not an email address"),
    ("a@example.com,b", "'b' is not an email address"),
    ("a@example.com\r\nBcc: x@evil.example", "must not contain line breaks"),
    ("", "needs at least one"),
])
def test_bad_addresses_are_refused(text, error):
    with pytest.raises(ValueError, match=error):
        mail.parse_addresses(text, "--to")


@pytest.mark.parametrize("kw, error", [
    (dict(user="u"), "never in clear text"),
    (dict(security="starttls", insecure=True, host="smtp.example.com"), "only for a local test server"),
    (dict(insecure=True), "only with --starttls or --ssl"),
    (dict(timeout=0), "--timeout must be > 0"),
])
def test_unsafe_server_settings_are_refused(kw, error):
    with pytest.raises(ValueError, match=error):
        mail.Server(**{"host": "127.0.0.1", "port": 25, **kw})


def test_hostport():
    assert mail.parse_hostport("127.0.0.1:2525") == ("127.0.0.1", 2525)
    assert mail.parse_hostport("[::1]:25") == ("::1", 25)
    with pytest.raises(ValueError, match="HOST:PORT"):
        mail.parse_hostport("smtp.example.com")


# --- the command, end to end ----------------------------------------------------------------

PLAN = ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4"]
EUR = ["--currency", "EUR"]
#: the workbooks the tests mail, rendered ahead by a forked child (conftest.py)
RENDERS_AHEAD = [(options_of(PLAN), False), (options_of(PLAN + EUR), False), ({"gpu": "mi355x"}, False)]
TODAY = __import__("datetime").date.today().isoformat()
NAME = f"llama-3.1-70b_h100-sxm_{TODAY}.xlsx"


def cli(*args, cwd, password=None, env=None, process=False):
    """`inference-ledger email ...`: the password only ever in its environment.  In process (from ``cwd``, with that
    environment; the workbook of these options is rendered once per session), or in a child process with
    ``process=True``."""
    child = {k: v for k, v in os.environ.items() if k not in (mail.PASSWORD_ENV, "SSL_CERT_FILE")}
    if password:
        child[mail.PASSWORD_ENV] = password
    child.update(env or {})
    if process:
        return subprocess.run([sys.executable, "-m", "inference_ledger", "email", *args], cwd=cwd, env=child,
                              capture_output=True, text=True, timeout=300)
    with pytest.MonkeyPatch.context() as mp, memoised_renders():
        for k in (mail.PASSWORD_ENV, "SSL_CERT_FILE"):
            mp.delenv(k, raising=False)
        for k, v in child.items():
            if os.environ.get(k) != v:
                mp.setenv(k, v)
        mp.chdir(cwd)
        code, out, err = run_cli("email", *args)
    return subprocess.CompletedProcess(["email", *args], code, out, err)


def no_password(r, raw: bytes = b""):
    """The password is in none of: stdout, stderr, the raw message, the workbook's XML parts."""
    assert PASSWORD not in r.stdout + r.stderr
    assert PASSWORD.encode() not in raw
    if raw:
        for part in email.message_from_bytes(raw, policy=email.policy.default).walk():
            if not part.is_multipart():
                payload = part.get_payload(decode=True)
                assert PASSWORD.encode() not in payload
                if part.get_content_type() == XLSX:
                    with zipfile.ZipFile(io.BytesIO(payload)) as z:
                        assert all(PASSWORD.encode() not in z.read(n) for n in z.namelist())


def parse(raw: bytes):
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    (att,) = list(msg.iter_attachments())
    return msg, att




@functools.lru_cache(maxsize=None)
def attached_plan(data: bytes) -> dict:
    """The attached workbook's plan: every formula has its cached value, tpot_seconds is live (a pure function of
    the bytes: each distinct attachment is read once)."""
    formulas = openpyxl.load_workbook(only_sheets(io.BytesIO(data), ["Bandwidth"]))
    cached = openpyxl.load_workbook(only_sheets(io.BytesIO(data), ["Plan", "Cost", "Bandwidth"]), data_only=True)
    # every <f> carries a <v>: openpyxl reads an empty-text cached value as None, so read the XML
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        sheets = [n for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
        cells = [c for n in sheets for c in re.findall(r"<c [^>]*>(?:(?!</c>).)*<f>(?:(?!</c>).)*</c>",
                                                          z.read(n).decode())]
    # a number/bool has a non-empty <v>; an empty text result is t="str" with <v></v>.
    # openpyxl alone writes <v /> with no type: that is the "no cached value" case.
    missing = [c[:60] for c in cells
               if not (re.search(r"<v>[^<]+</v>", c) or ('t="str"' in c and "<v></v>" in c))]
    assert cells and not missing, f"formula cells without a cached value: {missing[:5]}"
    v = {n: named(cached, n).value for n in ("model_id", "gpu_id", "gpus_per_replica", "gpus_for_qps", "verdict",
                                             "tpot_seconds", "monthly_cost_qps")}
    assert str(named(formulas, "tpot_seconds").value).startswith("=")  # a live formula ...
    assert isinstance(v["tpot_seconds"], float) and 0 < v["tpot_seconds"] < 1  # ... with its cached number
    assert (v["model_id"], v["gpu_id"], v["gpus_per_replica"]) == ("llama-3.1-70b", "h100-sxm", 4)
    return v


def check_message(raw: bytes):
    """The attachment is the .xlsx with cached values; the body states the verdict those values give."""
    msg, att = parse(raw)
    assert att.get_content_type() == XLSX and att.get_filename() == NAME
    v = attached_plan(att.get_content())
    text = msg.get_body(("plain",)).get_content()
    html = re.sub(r"<[^>]+>", " ", msg.get_body(("html",)).get_content())  # the words a reader sees
    for body in (text, html):
        assert "Llama-3.1-70B" in body and "4 x NVIDIA H100 SXM5 80GB" in body
        assert f"{v['tpot_seconds'] * 1e3:.1f} ms" in body
        assert f"${v['monthly_cost_qps']:,.0f}/month" in body
        assert re.search(rf"GPUs for the target QPS\W+{v['gpus_for_qps']:.0f}\W", body)
        words = ("does not fit", "fits below the requested concurrency", "fits, misses targets", "fits, meets targets")
        assert re.search(rf"Verdict\W+{words[int(v['verdict'])]}\W", body)
    return msg


def test_plain_send_delivers_verdict_and_workbook(tmp_path):
    inbox = Inbox()
    with smtp_server(inbox) as server:
        r = cli("--to", "cfo@example.com", "--from", "planner@example.com", "--smtp", f"127.0.0.1:{server.port}",
                "-o", "plan.xlsx", *PLAN, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"sent {NAME} to cfo@example.com via 127.0.0.1:{server.port}; "
                                f"the workbook is saved at {tmp_path / 'plan.xlsx'}")
    ((mail_from, rcpts, raw),) = inbox.received
    assert (mail_from, rcpts) == ("planner@example.com", ["cfo@example.com"])
    msg = check_message(raw)
    assert parse(raw)[1].get_content() == (tmp_path / "plan.xlsx").read_bytes()
    assert msg["Subject"].startswith("Inference plan: Llama-3.1-70B on 4 x NVIDIA H100 SXM5 80GB: fits, meets targets, TPOT ")


def test_starttls_and_auth_with_verified_certificate(tmp_path, ca):
    pem, ctx = ca
    inbox = Inbox()
    with smtp_server(inbox, tls_context=ctx, require_starttls=True, auth_required=True,
                     authenticator=check_login) as server:
        r = cli("--to", "cfo@example.com", "--smtp", f"127.0.0.1:{server.port}", "--starttls",
                "--user", USER, "--from", "planner@example.com", "--cafile", str(pem), "--subject", "Q3 GPUs",
                *PLAN, cwd=tmp_path, password=PASSWORD)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    ((_, _, raw),) = inbox.received
    assert check_message(raw)["Subject"] == "Q3 GPUs"
    no_password(r, raw)  # the attachment's XML parts included, and it is the saved workbook:
    assert parse(raw)[1].get_content() == (tmp_path / NAME).read_bytes()


def test_implicit_tls_trusts_ssl_cert_file(tmp_path, ca):
    pem, ctx = ca
    inbox = Inbox()
    with smtp_server(inbox, ssl_context=ctx, auth_require_tls=False, authenticator=check_login) as server:
        r = cli("--to", "cfo@example.com", "--smtp", f"127.0.0.1:{server.port}", "--ssl", "--user", USER,
                "--from", "planner@example.com", *PLAN, cwd=tmp_path, password=PASSWORD,
                env={"SSL_CERT_FILE": str(pem)})
    assert r.returncode == 0, r.stderr
    ((_, _, raw),) = inbox.received
    check_message(raw)
    no_password(r, raw)


def test_several_recipients(tmp_path):
    inbox = Inbox()
    with smtp_server(inbox) as server:
        r = cli("--to", "cfo@example.com, Procurement <buy@example.com>", "--cc", "lead@example.org",
                "--from", "planner@example.com", "--smtp", f"127.0.0.1:{server.port}", *PLAN, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ((_, rcpts, raw),) = inbox.received
    assert rcpts == ["cfo@example.com", "buy@example.com", "lead@example.org"]
    msg = check_message(raw)
    assert msg["To"] == "cfo@example.com, buy@example.com" and msg["Cc"] == "lead@example.org"
    assert (tmp_path / NAME).is_file()  # default: saved in the current directory under the attachment name


def test_eml_writes_the_message_and_sends_nothing(tmp_path):
    r = cli("--to", "cfo@example.com", "--from", "planner@example.com", "--eml", "plan.eml", *PLAN, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == (f"wrote the message to {tmp_path / 'plan.eml'}; "
                                f"the workbook is saved at {tmp_path / NAME}")
    raw = (tmp_path / "plan.eml").read_bytes()
    check_message(raw)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([NAME, "plan.eml"])  # no temp files left


def test_insecure_warns_loudly_and_skips_verification(tmp_path, ca):
    _, ctx = ca
    inbox = Inbox()
    with smtp_server(inbox, tls_context=ctx, require_starttls=True) as server:
        r = cli("--to", "cfo@example.com", "--from", "planner@example.com", "--smtp", f"127.0.0.1:{server.port}",
                "--starttls", "--insecure", *PLAN, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("WARNING: --insecure: the TLS certificate of 127.0.0.1:")
    assert "NOT verified" in r.stderr and "local test server" in r.stderr
    assert len(inbox.received) == 1


@contextlib.contextmanager
def silent_listener():
    """Accepts TCP connections (kernel backlog) but never says a word: a hung server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        yield s.getsockname()[1]


@contextlib.contextmanager
def closed_port():
    yield free_port()


FAILURES = {
    # case: (server factory(ca) -> context manager yielding a port, extra args, password, expected reason)
    "connection refused": (lambda ca: closed_port(), [], None,
                           r"connection to 127\.0\.0\.1:\d+ refused"),
    "timeout": (lambda ca: silent_listener(), ["--timeout", "0.5"], None,
                r"no answer from 127\.0\.0\.1:\d+ within 0\.5 s \(--timeout\)"),
    "starttls refused": (lambda ca: _port(smtp_server(Inbox())), ["--starttls", "--user", USER], PASSWORD,
                         r"127\.0\.0\.1:\d+ does not offer STARTTLS; refusing to continue unencrypted"),
    "untrusted certificate": (lambda ca: _port(smtp_server(Inbox(), tls_context=ca[1])), ["--starttls"], None,
                              r"TLS certificate of 127\.0\.0\.1:\d+ could not be verified"),
    "bad credentials": (lambda ca: _port(smtp_server(Inbox(), tls_context=ca[1], authenticator=check_login)),
                        ["--starttls", "--user", USER, "--cafile", "{cafile}"], "not-" + PASSWORD,
                        r"rejected the credentials of planner \(535 5\.7\.8 Authentication credentials invalid\)"),
    "rejected recipient": (lambda ca: _port(smtp_server(Inbox(refuse={"nobody@example.com"}))),
                           ["--to", "cfo@example.com,nobody@example.com"], None,
                           r"refused recipient nobody@example\.com \(550 5\.1\.1 <nobody@example\.com>: "
                           r"mailbox unavailable\); sent to nobody"),
    "over-size (SIZE)": (lambda ca: _port(smtp_server(Inbox(), data_size_limit=4096)), [], None,
                         r"the message is [\d,]+ bytes, over the 4,096-byte limit \(SIZE\)"),
    "over-size (552)": (lambda ca: _port(smtp_server(Inbox(data_reply="552 5.3.4 Message too big for system"))),
                        [], None, r"refused the message as too large \(552 5\.3\.4 Message too big for system\)"),
}


@contextlib.contextmanager
def _port(server_cm):
    with server_cm as controller:
        yield controller.port


@pytest.mark.parametrize("case", list(FAILURES))
def test_failure_is_one_line_and_keeps_the_workbook(case, tmp_path, ca):
    factory, extra, password, reason = FAILURES[case]
    extra = [a.format(cafile=ca[0]) for a in extra]
    to = [] if "--to" in extra else ["--to", "cfo@example.com"]
    with factory(ca) as port:
        r = cli(*to, "--from", "planner@example.com", "--smtp", f"127.0.0.1:{port}", *extra, *PLAN,
                cwd=tmp_path, password=password)
    assert r.returncode == 1
    assert r.stdout == ""
    (line,) = r.stderr.splitlines()
    assert line.startswith("inference-ledger: error: not sent: ")
    assert re.search(reason, line), line
    assert line.endswith(f". The workbook is saved at {tmp_path / NAME}")
    assert (tmp_path / NAME).is_file()
    no_password(r)
    if password:
        assert password not in r.stderr


@pytest.mark.parametrize("args, password, error", [
    (["--password", PASSWORD], None, "No such option '--password'"),
    (["--user", USER, "--starttls"], None, f"needs the password in the environment variable {mail.PASSWORD_ENV}"),
    (["--user", USER], PASSWORD, "never in clear text"),
    (["--starttls", "--ssl"], None, "exclude each other"),
    (["--subject", "Q3\nBcc: x@evil.example"], None, "--subject must not contain line breaks"),
    ([], None, "give --smtp HOST:PORT to send, or --eml FILE"),
])
def test_usage_errors_come_before_any_work(args, password, error, tmp_path):
    smtp = ["--smtp", "127.0.0.1:1"] if args else []  # nothing listens there, and nothing may connect
    r = cli("--to", "cfo@example.com", "--from", "planner@example.com", *smtp, *args, *PLAN,
            cwd=tmp_path, password=password, process="--password" in args)   # one in a real process
    assert r.returncode == 2
    (line,) = r.stderr.splitlines()
    assert error in line and PASSWORD not in line
    assert list(tmp_path.iterdir()) == []  # nothing built: bad options fail before the workbook


def test_a_bill_at_a_placeholder_price_says_so_in_the_subject_and_the_body(tmp_path):
    """MI355X has no public list price (gpus.csv: "placeholder, edit me"): `plan` says so under its sentences, but the
    message read "$14,600/month" in its subject and body with no word of it."""
    r = cli("--to", "cfo@example.com", "--from", "planner@example.com", "--eml", "plan.eml", "--gpu", "mi355x",
            cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    msg, _ = parse((tmp_path / "plan.eml").read_bytes())
    text = msg.get_body(("plain",)).get_content()
    assert str(msg["Subject"]).replace("\n", "").endswith("/month at a placeholder price"), msg["Subject"]
    assert ("Price: $2.50 per GPU-hour is a placeholder (no public list price for mi355x): every cost here rests on "
            "it; give the price you pay (--price-per-gpu-hour, or the Plan sheet's override).") in " ".join(text.split())
    assert "Monthly cost for the target QPS: $14,600/month at a placeholder price" in " ".join(text.split())
    v = mail.Verdict.from_plan({"gpus_per_replica": 4.0, "gpus_for_qps": 8.0, "verdict": 3.0, "tpot_seconds": 0.05,
                                "monthly_cost_qps": 14600.0}, "llama-3.1-70b", "h100")   # a listed price: no word
    assert "placeholder" not in v.text() + v.html() + v.headline()


def test_eml_in_the_build_currency_shows_that_currency(tmp_path):
    """--currency is a build parameter the message honours too: the body's amounts carry the workbook's symbol."""
    r = cli("--to", "cfo@example.com", "--from", "planner@example.com", "--eml", "plan.eml", *EUR, *PLAN, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    msg, att = parse((tmp_path / "plan.eml").read_bytes())
    cached = openpyxl.load_workbook(only_sheets(io.BytesIO(att.get_content()), ["Cost"]), data_only=True)
    cost = named(cached, "monthly_cost_qps").value
    text = msg.get_body(("plain",)).get_content()
    assert f"€{cost:,.0f}/month" in text and f"€{cost:,.0f}/month" in str(msg["Subject"])
    assert "$" not in text   # no amount left in dollars
    assert named(cached, "monthly_cost_qps").number_format.startswith('"€"')   # the workbook shows the same symbol
