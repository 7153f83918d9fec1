"""The same rules in every command: the file writer's policy, exit codes and one-line errors.

Exit 2: wrong input (option, value, unknown id, output name, a bad field or cell in a file
given); exit 1: the action failed (a file that cannot or must not be written, the network,
no answer).  Every error is one line starting ``inference-ledger: error:``; it names the
user's path, never the temporary file, and gives the OS reason in words (no ``[Errno N]``).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import pytest

from children import forked

from inference_ledger.core import files
from inference_ledger.cli import COMMANDS, main, run

ROOT = Path(__file__).resolve().parent.parent
IS_ROOT = os.geteuid() == 0


@pytest.fixture(autouse=True)
def _scratch_cwd(tmp_path_factory, monkeypatch):
    """Run from a scratch folder: a command that writes to the current directory must not touch the checkout."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(autouse=True)
def _shared_renders(cached_renders):
    """These tests are of the commands around the workbook (writer policy, exit codes, one-line errors): a workbook
    of the same options is rendered once per session (tests/renders.py)."""


def cli(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the real entry point, in process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            run([str(a) for a in argv])
            code = 0
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def assert_one_line(err: str, *needles: str) -> None:
    assert err.count("\n") == 1 and err.startswith("inference-ledger: error: "), err
    assert "Traceback" not in err and "[Errno" not in err and ".tmp" not in err, err
    for n in needles:
        assert n in err, (n, err)


# ----------------------------------------------------------------------------------------
# the writer's policy, in every command that writes a file
# ----------------------------------------------------------------------------------------

WRITERS = {
    # name: (argv with {out} for the target and {dir} for the folder, extension of the target)
    "build": (["build", "-o", "{out}"], ".xlsx"),
    "build-template": (["build", "-o", "{out}"], ".xltx"),
    "sweep-csv": (["sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--tp", "1,2", "--concurrency", "1", "-o", "{out}"],
                  ".csv"),
    "sweep-xlsx": (["sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--tp", "1", "--concurrency", "1", "-o", "{out}"],
                   ".xlsx"),
    "recommend": (["recommend", "-m", "llama-3.1-8b", "--qps", "1", "-g", "h100-sxm", "--tp", "1", "--top", "2",
                   "-o", "{out}"], ".csv"),
    "email-eml": (["email", "--to", "cfo@example.com", "--from", "me@example.com", "--eml", "{out}",
                   "-o", "{dir}/saved.xlsx"], ".eml"),
    "email-attachment": (["email", "--to", "cfo@example.com", "--from", "me@example.com", "--eml", "{dir}/m.eml",
                          "-o", "{out}"], ".xlsx"),
}
#: the workbooks the writers write (the default one and its template), rendered ahead by a forked child (conftest.py)
RENDERS_AHEAD = [({}, False), ({}, True)]


def _argv(writer: str, out: Path | str, folder: Path) -> list[str]:
    argv, _ = WRITERS[writer]
    return [a.replace("{out}", str(out)).replace("{dir}", str(folder)) for a in argv]


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry of the folder: its kind, mode and contents (or link target)."""
    out = {}
    for p in sorted(folder.iterdir()):
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out[p.name] = ("link", os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[p.name] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
        else:
            out[p.name] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
    return out


def _make(kind: str, folder: Path, ext: str) -> tuple[Path, list]:
    """A target of this kind named with the right extension; anything to close afterwards."""
    target = folder / f"target{ext}"
    keep = []
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(target))
        keep.append(s)
    elif kind == "device":          # root only: the node of /dev/full (1, 7), as in `-o /dev/full`
        os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    elif kind == "symlink":
        (folder / "real.bin").write_bytes(b"old")
        os.symlink("real.bin", target)
    elif kind == "read-only":
        target.write_bytes(b"old")
        target.chmod(0o444)
    return target, keep


REFUSED = [("folder", "it is a folder"), ("fifo", "it is a FIFO"), ("socket", "it is a socket"),
           ("symlink", "--follow-symlinks"), ("read-only", "read-only")] + ([("device", "it is a device")] if IS_ROOT else [])


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("kind, needle", REFUSED)
def test_writer_refuses_what_it_must_not_replace(tmp_path, writer, kind, needle):
    _, ext = WRITERS[writer]
    target, keep = _make(kind, tmp_path, ext)
    before = _snapshot(tmp_path)
    code, out, err = cli(*_argv(writer, target, tmp_path))
    for k in keep:
        k.close()
    assert code == 1, err
    assert_one_line(err, str(target), needle)
    assert _snapshot(tmp_path) == before          # nothing changed, nothing left behind


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("name, code, needle", [
    ("plan.ods", 2, "use "), ("plan", 2, "no extension"), ("", 2, "give a file name"),
    ("missing/plan{ext}", 1, "folder"),
])
def test_writer_names_and_folders(tmp_path, writer, name, code, needle):
    _, ext = WRITERS[writer]
    target = str(tmp_path / name.format(ext=ext)) if name else ""
    got, _, err = cli(*_argv(writer, target, tmp_path))
    assert got == code, err
    assert_one_line(err, needle)
    assert list(tmp_path.iterdir()) == []


def test_wrong_extension_names_the_allowed_ones(tmp_path):
    code, _, err = cli("build", "-o", tmp_path / "plan.csv")
    assert code == 2 and ".xlsx or .xltx" in err
    code, _, err = cli("sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-o", tmp_path / "s.xlsm")
    assert code == 2 and ".xlsx or .csv" in err
    code, _, err = cli("email", "--to", "a@example.com", "--from", "b@example.com", "--eml", tmp_path / "m.txt")
    assert code == 2 and ".eml" in err


@pytest.mark.parametrize("writer", list(WRITERS))
def test_writer_replaces_a_file_keeping_its_permissions(tmp_path, writer):
    _, ext = WRITERS[writer]
    target = tmp_path / f"target{ext}"
    target.write_bytes(b"old")
    target.chmod(0o640)
    code, _, err = cli(*_argv(writer, target, tmp_path))
    assert code == 0, err
    assert target.read_bytes() != b"old" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", list(WRITERS))
def test_force_replaces_a_read_only_file_and_keeps_it_read_only(tmp_path, writer):
    _, ext = WRITERS[writer]
    target, _ = _make("read-only", tmp_path, ext)
    code, _, err = cli(*_argv(writer, target, tmp_path), "--force")
    assert code == 0, err
    assert target.read_bytes() != b"old" and stat.S_IMODE(target.stat().st_mode) == 0o444


@pytest.mark.parametrize("writer", list(WRITERS))
def test_follow_symlinks_writes_through_to_the_target(tmp_path, writer):
    _, ext = WRITERS[writer]
    target, _ = _make("symlink", tmp_path, ext)
    (tmp_path / "real.bin").chmod(0o600)
    code, _, err = cli(*_argv(writer, target, tmp_path), "--follow-symlinks")
    assert code == 0, err
    assert os.readlink(target) == "real.bin"          # the link stays a link ...
    real = tmp_path / "real.bin"
    assert real.read_bytes() != b"old" and stat.S_IMODE(real.stat().st_mode) == 0o600   # ... to the new contents


def test_os_errors_name_the_path_in_words(tmp_path, monkeypatch):
    """A failing disk: the user's path and 'no space left on device', never the temp file or errno."""
    def full(*a, **k):
        raise OSError(28, os.strerror(28), str(tmp_path / ".x.tmp"))

    monkeypatch.setattr(files.os, "replace", full)
    code, _, err = cli("build", "-o", tmp_path / "plan.xlsx")
    assert code == 1
    assert_one_line(err, str(tmp_path / "plan.xlsx"), "no space left on device")
    assert list(tmp_path.iterdir()) == []


def _read_only_cases(folder: Path) -> list[tuple]:
    """Read-only file: refused, then replaced with --force (mode kept); as whoever runs this."""
    target = folder / "ro.csv"
    target.write_bytes(b"old")
    target.chmod(0o444)
    argv = _argv("sweep-csv", target, folder)
    refused = cli(*argv)
    forced = cli(*argv, "--force")
    return [refused[0], "read-only" in refused[2], target.read_bytes() != b"old",
            stat.S_IMODE(target.stat().st_mode), forced[0]]


def test_read_only_as_this_user_and_as_a_normal_user(tmp_path):
    expected = [1, True, True, 0o444, 0]
    assert _read_only_cases(tmp_path) == expected
    if not IS_ROOT:
        return                      # this run is the normal user
    # and as an unprivileged user (nobody), in a forked child that keeps the loaded modules
    folder = Path(tempfile.mkdtemp(prefix="i14-ro-", dir="/tmp"))
    folder.chmod(0o777)
    assert _as_nobody(lambda: _read_only_cases(folder)) == expected


#: The user nobody, whom a root run drops to for the permission cases.
NOBODY = 65534


def _as_nobody(run):
    """``run()`` in a forked child that dropped to the user nobody (65534); its JSON-able result."""
    import inference_ledger.cli.sweep  # noqa: F401  (imported before dropping privileges)
    import inference_ledger.workbook.sweep  # noqa: F401
    return forked(run, uid=NOBODY)


def test_unwritable_folder_as_a_normal_user(tmp_path):
    """A folder the user cannot write to: one line naming the path and 'permission denied', exit 1."""
    if IS_ROOT:   # root writes anywhere: run the command as nobody in a forked child
        folder = Path(tempfile.mkdtemp(prefix="i14-locked-", dir="/tmp"))
        folder.chmod(0o555)
        code, _, err = _as_nobody(lambda: cli(*_argv("sweep-csv", folder / "s.csv", folder))) or (None, None, None)
    else:
        folder = tmp_path / "locked"
        folder.mkdir()
        folder.chmod(0o555)
        code, _, err = cli(*_argv("sweep-csv", folder / "s.csv", folder))
    assert code == 1
    assert_one_line(err, str(folder / "s.csv"), "permission denied")
    assert list(folder.iterdir()) == []


def test_models_and_gpus_tables_are_aligned():
    for name in ("models", "gpus"):
        lines = cli(name)[1].splitlines()
        starts = {len(ln) - len(ln[ln.index(" "):].lstrip()) for ln in lines}   # where the name column starts
        assert len(starts) == 1, (name, starts)


# ----------------------------------------------------------------------------------------
# exit codes and one-line errors, every command
# ----------------------------------------------------------------------------------------

def _files(tmp: Path) -> dict[str, Path]:
    binary = tmp / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00{garbage")
    (tmp / "binary.csv").write_bytes(b"\xff\xfe\x00,,\n")
    (tmp / "four.csv").write_text("label,model,gpu,tp\nx,llama-3.1-8b,h100-sxm,four\n")
    (tmp / "unknown-model.csv").write_text("label,model,gpu\nx,llama-9,h100-sxm\n")
    head = "id,model_id,gpu_id,engine_id,tp,weights_gib\n"
    (tmp / "tp-zero.csv").write_text(head + "r1,llama-3.1-8b,h100-sxm,vllm,zero,14.99\n")
    (tmp / "weights-abc.csv").write_text(head + "r1,llama-3.1-8b,h100-sxm,vllm,1,abc\n")
    return {"binary.json": binary}


MAIL = ["email", "--to", "cfo@example.com", "--from", "me@example.com"]
SWEEP = ["sweep", "-m", "llama-3.1-8b", "-g", "h100-sxm"]
REC = ["recommend", "-m", "llama-3.1-8b", "--qps", "1", "-g", "h100-sxm"]

# (argv, exit code, what the one line must say); {t} is a scratch folder with the files of _files()
MISTAKES = [
    # the same mistake, the same code and words, in every command that takes it
    *[(argv + ["--tp", "0"], 2, "'--tp': tp must be a whole number >= 1") for argv in
      (["plan"], ["build", "-o", "{t}/p.xlsx"], SWEEP + ["-o", "{t}/s.csv"], REC, MAIL + ["--eml", "{t}/m.eml"])],
    *[(argv + ["--model", "llama-9"], 2, "unknown model 'llama-9'") for argv in
      (["plan"], ["build", "-o", "{t}/p.xlsx"], MAIL + ["--eml", "{t}/m.eml"])],
    *[(argv, 2, "unknown model 'llama-9'") for argv in
      (["sweep", "-m", "llama-9", "-g", "h100-sxm", "-o", "{t}/s.csv"], ["recommend", "-m", "llama-9", "--qps", "1"])],
    *[(argv + ["--kv-dtype", "int4"], 2, "did you mean int4-kv?") for argv in
      (["plan"], ["build", "-o", "{t}/p.xlsx"], SWEEP + ["-o", "{t}/s.csv"], REC)],
    *[(argv + ["--gpu-memory-utilization", "150%"], 2, "'--gpu-memory-utilization'") for argv in
      (["plan"], ["build", "-o", "{t}/p.xlsx"], SWEEP + ["-o", "{t}/s.csv"], REC)],
    # plan
    (["plan", "--tp", "four"], 2, "'--tp': 'four' is not a number"),
    (["plan", "--config", "{t}/binary.json"], 2, "binary.json is not UTF-8 text"),
    (["plan", "--config", "{t}/nothing.json"], 2, "'--config'"),
    (["plan", "--ttft-target", "500 lightyears"], 2, "'--ttft-target'"),
    (["plan", "--no-such-option"], 2, "No such option"),
    # build
    (["build", "-o", "{t}/p.xlsx", "--scenarios", "{t}/four.csv"], 2, "four.csv line 2, column 'tp': 'four' is not a number"),
    (["build", "-o", "{t}/p.xlsx", "--scenarios", "{t}/binary.csv"], 2, "binary.csv: not a UTF-8 text CSV"),
    (["build", "-o", "{t}/p.xlsx", "--scenarios", "{t}/unknown-model.csv"], 2, "unknown model 'llama-9'"),
    # sweep
    (SWEEP + ["--concurrency", "0", "-o", "{t}/s.csv"], 2, "'--concurrency'"),
    (SWEEP + ["--tp", "1,x", "-o", "{t}/s.csv"], 2, "'--tp': 'x' is not a number in GPUs"),
    (SWEEP + ["--max-rows", "1", "--tp", "1,2", "-o", "{t}/s.csv"], 2, "over the limit of 1 rows"),
    (["sweep", "-m", "llama-3.1-8b", "-o", "{t}/s.csv"], 2, "Missing option '--gpu'"),
    # recommend
    (REC + ["--ttft", "0"], 2, "'--ttft'"),
    (REC[:3] + REC[5:] + ["--qps", "-1"], 2, "'--qps'"),   # REC without its own --qps: an option is given once
    (REC + ["--ttft", "1ms"], 1, "no plan meets"),        # a valid question without an answer
    # validate
    (["validate", "--data", "{t}/binary.csv"], 2, "binary.csv: not a UTF-8 text CSV"),
    (["validate", "--data", "{t}/tp-zero.csv"], 2, "tp-zero.csv row 1 (r1), column 'tp': 'zero' is not a number"),
    (["validate", "--data", "{t}/weights-abc.csv"], 2, "row 1 (r1), column 'weights_gib': 'abc' is not a number"),
    (["validate", "--data", "{t}/nothing.csv"], 2, "'--data'"),
    (["validate", "--format", "xml"], 2, "'--format'"),
    # email
    (MAIL[:3] + ["--eml", "{t}/m.eml"], 2, "--from is required"),
    (["email", "--to", "not an address", "--from", "me@example.com", "--eml", "{t}/m.eml"], 2, "--to"),
    (MAIL, 2, "give --smtp HOST:PORT"),
    (MAIL + ["--eml", "{t}/missing/m.eml"], 1, "folder"),
    (MAIL + ["--smtp", "127.0.0.1:1", "-o", "{t}/p.xlsx", "--timeout", "2"], 1, "not sent"),
    # calibrate
    (["calibrate", "{t}/four.csv", "--model", "llama-3.1-8b", "-o", "{t}/p.csv"], 2,
     "four.csv: not a file this reads"),
    (["calibrate", "{t}/binary.json", "--model", "llama-3.1-8b", "-o", "{t}/p.csv"], 2, "binary.json: not UTF-8 text"),
    (["calibrate", "{t}/nothing.json", "-o", "{t}/p.csv"], 2, "'FILE...'"),
    (["calibrate", "{t}/four.csv", "-o", "{t}/p.xlsx"], 2, "'.xlsx' is not a format this writes"),
    # catalogs
    (["models", "--csv"], 2, "No such option"),
    (["gpus", "--csv"], 2, "No such option"),
    (["engines", "--csv"], 2, "No such option"),
    (["nosuchcommand"], 2, "No such command"),
]


@pytest.mark.parametrize("argv, code, needle", MISTAKES, ids=[" ".join(a[:1] + a[-2:]) for a, *_ in MISTAKES])
def test_every_command_same_exit_codes_one_line(tmp_path, argv, code, needle):
    _files(tmp_path)
    before = set(tmp_path.iterdir())
    got, out, err = cli(*[a.replace("{t}", str(tmp_path)) for a in argv])
    assert got == code, err
    assert_one_line(err, needle)
    written = set(tmp_path.iterdir()) - before
    if code == 2:
        assert written == set()            # wrong input: nothing was built, nothing written
    assert not [p for p in written if p.name.endswith(".tmp")]


def test_every_command_is_in_the_table():
    assert {a[0] for a, *_ in MISTAKES} >= set(COMMANDS)


def test_the_docs_state_the_exit_code_rule():
    text = (ROOT / "docs" / "cli.md").read_text()
    assert "Exit codes" in text and "exit 2" in text and "exit 1" in text


# ----------------------------------------------------------------------------------------
# help: no %%, defaults in a form the option accepts, catalog defaults and codes in words
# ----------------------------------------------------------------------------------------

def _commands():
    ctx = click.Context(main)
    return {name: main.get_command(ctx, name) for name in COMMANDS}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_has_no_literal_percent_percent(name):
    code, out, _ = cli(name, "--help")
    assert code == 0 and "%%" not in out


def _shown_defaults(text: str) -> list[str]:
    import re

    pats = (r"Default: ([^ ()]+(?: [A-Za-z/-]+)?)\.", r"no --gpu, TP \d+: ([^)]+)\)", r"\(([^()]+) without it\)")
    return [m for p in pats for m in re.findall(p, text)]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_option_accepts_its_printed_default(name):
    from inference_ledger.cli.plan import Quantity

    checked = 0
    for p in _commands()[name].params:
        if not isinstance(p.type, Quantity):
            if isinstance(p, click.Option) and p.show_default and p.default is not None and not p.is_flag:
                p.type.convert(str(p.default), p, None)      # click's own [default: x]
            continue
        shown = _shown_defaults(p.help)
        for text in shown:
            p.type.convert(text, p, None)
            checked += 1
    assert checked or name in ("models", "gpus", "engines", "validate")


@pytest.mark.parametrize("text, unit, value", [
    ("500ms", "s", 0.5), ("0.5s", "s", 0.5), ("90%", "fraction", 0.9), ("0.9", "fraction", 0.9),
    ("79.1875GiB", "B", 85_026_930_688), ("1,024 tokens", "tokens", 1024), ("$2.50/GPU-h", "$/GPU-h", 2.5),
    ("3.35TB/s", "B/s", 3.35e12), ("989TFLOP/s", "FLOP/s", 989e12), ("70B", "params", 70e9),
])
def test_printed_forms_parse(text, unit, value):
    from inference_ledger.cli.plan import parse_quantity

    assert parse_quantity(text, unit) == pytest.approx(value)


def test_plan_accepts_the_printed_forms():
    a = json.loads(cli("plan", "--json", "--ttft-target", "500ms", "--gpu-memory-utilization", "90%")[1])
    b = json.loads(cli("plan", "--json", "--ttft-target", "0.5", "--gpu-memory-utilization", "0.9")[1])
    assert a == b
    c = json.loads(cli("plan", "--json", "--kv-budget-rule", "SGLang")[1])
    assert c["kv_budget_rule"] == 2


def test_catalog_defaults_and_codes_say_so():
    for name in ("sweep", "recommend"):
        price = next(p for p in _commands()[name].params if p.name == "price_per_gpu_hour")
        assert "catalog" in price.help and "$2.50" not in price.help
    rule = next(p for p in _commands()["plan"].params if p.name == "kv_budget_rule")
    assert "1 vLLM, 2 SGLang, 3 TensorRT-LLM" in rule.help


# ----------------------------------------------------------------------------------------
# fast start: `plan --json` loads neither the workbook writer nor mail/TLS
# ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["plan", "--json"], ["--help"], ["plan", "--help"], ["build", "--help"],
                                  ["email", "--help"], ["models"]])
def test_light_commands_load_no_heavy_modules(argv):
    code = ("import sys\nfrom inference_ledger.cli import run\ntry:\n    run(%r)\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('openpyxl', 'smtplib', 'ssl', 'xlwings', "
            "'lxml') or m.startswith('inference_ledger.workbook.') or m == 'inference_ledger.io.mail')\n"
            "print('HEAVY', heavy, file=sys.stderr)\n") % argv
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "HEAVY []" in proc.stderr, proc.stderr[-2000:]
