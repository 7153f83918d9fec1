"""Every file the project writes goes through here: atomically, and never over what it should not replace.

The policy (the same for ``build``, ``sweep``, ``recommend -o``, ``email --eml`` and the
workbook ``email`` saves):

* the extension must match the format (``.xlsx``/``.xltx``, ``.csv``, ``.eml``); anything
  else is a wrong value (:class:`BadOutputName`, exit 2) and is refused before any work;
* an existing target that is not a regular file (a folder, a device such as ``/dev/full``,
  a FIFO, a socket) is refused (:class:`WriteRefused`, exit 1);
* a read-only file, judged by its mode bits (root passes ``os.access``), is refused unless
  ``--force``;
* a symbolic link is refused unless ``--follow-symlinks``; then the file it points to is
  replaced (the link stays, and points to the new contents);
* a file that is replaced keeps its permission bits; a new file gets 0666 less the umask;
* the data goes to a temporary file in the same folder, then ``os.replace``: a reader sees
  the old file or the new one, never half of one; on any failure the temporary file is removed;
* errors name the user's path, never the temporary file, and give the OS reason in words.

The CLI sets ``--force``/``--follow-symlinks`` for a command with :func:`policy`; library
callers get the safe defaults.

Files the user gives are read through :func:`read_input`: regular files only (a FIFO, a device
such as ``/dev/zero``, a folder or a socket is refused in one line naming it, before anything
blocks or grows), at most :data:`INPUT_LIMITS` bytes per kind, every read error naming the file.

This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import gc
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

#: Allowed extensions per format (lower case; the first is the one to suggest).
FORMATS: dict[str, tuple[str, ...]] = {
    "xlsx": (".xlsx", ".xltx"),
    "csv": (".csv",),
    "eml": (".eml",),
    "md": (".md",),               # validate --accuracy-page
    "table": (".xlsx", ".csv"),   # sweep/recommend: live formulas or values
}


class InvalidInput(ValueError):
    """What the user gave is wrong: a file name, or the contents of a file they gave (exit 2)."""


class BadOutputName(InvalidInput):
    """The output name does not fit the format (a wrong value: exit 2)."""


class FileFailed(OSError):
    """A file cannot be read or written, or must not be replaced (exit 1); the message is one line."""

    def __str__(self) -> str:  # one line, without OSError's "[Errno N]" prefix
        return str(self.args[0]) if self.args else "file operation failed"


WriteRefused = FileFailed


@dataclass(frozen=True)
class Policy:
    force: bool = False             # replace a read-only file
    follow_symlinks: bool = False   # write through a symbolic link to its target


_POLICY: contextvars.ContextVar[Policy] = contextvars.ContextVar("inference_ledger_write_policy", default=Policy())


@contextlib.contextmanager
def policy(force: bool = False, follow_symlinks: bool = False) -> Iterator[Policy]:
    """Within the block, writers replace read-only files (force) and write through symlinks (follow_symlinks)."""
    token = _POLICY.set(Policy(force, follow_symlinks))
    try:
        yield _POLICY.get()
    finally:
        _POLICY.reset(token)


def reason(e: OSError) -> str:
    """The OS reason in words, lower case first letter ('no space left on device'), never '[Errno 28]'."""
    text = e.strerror or (os.strerror(e.errno) if e.errno else str(e))
    return text[:1].lower() + text[1:]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_name(path: str | os.PathLike, fmt: str, option: str = "-o") -> Path:
    """The path, if its extension fits ``fmt``; else BadOutputName naming the allowed extensions."""
    allowed = FORMATS[fmt]
    text = os.fspath(path)
    p = Path(text)
    if not text.strip() or text.endswith(("/", os.sep)) or p.name in ("", ".", ".."):
        raise BadOutputName(f"{option} {text!r}: give a file name ending in {' or '.join(allowed)}")
    if p.suffix.lower() not in allowed:
        got = f"'{p.suffix}' is not a format this writes" if p.suffix else "the name has no extension"
        raise BadOutputName(f"{option} {text}: {got}; use {' or '.join(allowed)}")
    return p


def check_target(path: str | os.PathLike, fmt: str, option: str = "-o") -> tuple[Path, int | None]:
    """Apply the policy to ``path`` without writing: (the file to replace or create, its mode bits or None).

    BadOutputName for a wrong extension; WriteRefused for a target that must not be replaced
    or a folder that does not exist.
    """
    p = check_name(path, fmt, option)
    pol = _POLICY.get()
    target = p
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteRefused(f"cannot write {p}: {reason(e)}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not pol.follow_symlinks:
            raise WriteRefused(f"refusing to replace {p}: it is a symbolic link to {os.readlink(p)} "
                               "(give --follow-symlinks to write to the file it points to)")
        target = Path(os.path.realpath(p))
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None                   # a dangling link: create its target
        except OSError as e:
            raise WriteRefused(f"cannot write {p}: {reason(e)}") from None
    folder = target.parent
    if not folder.is_dir():
        raise WriteRefused(f"cannot write {p}: folder {folder} does not exist")
    if st is None:
        return target, None
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(f"refusing to replace {p}: it is {_kind(st.st_mode)}, not a regular file")
    mode = stat.S_IMODE(st.st_mode)
    read_only = not (mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(target, os.W_OK)
    if read_only and not pol.force:
        raise WriteRefused(f"refusing to replace {p}: it is read-only (mode {mode:o}; give --force to replace it)")
    return target, mode


@contextlib.contextmanager
def atomic(path: str | os.PathLike, fmt: str, option: str = "-o") -> Iterator[str]:
    """Yield a temporary path next to ``path``; on success it replaces ``path`` under the policy.

    On any error the temporary file is removed and the target is left as it was.  OS errors
    come out as WriteRefused naming ``path`` (never the temporary file) with the reason in words.
    """
    p = Path(os.fspath(path))
    target, mode = check_target(p, fmt, option)
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + target.name + ".", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise WriteRefused(f"cannot write {p}: {reason(e)} (in folder {target.parent})") from None
    os.close(fd)
    try:
        yield tmp
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        _fsync(tmp)
        os.replace(tmp, target)
    except OSError as e:
        if isinstance(e, WriteRefused):
            raise
        raise WriteRefused(f"cannot write {p}: {reason(e)}") from None
    except Exception as e:
        code = serialisation_errno(e)
        if code is None:
            raise
        raise WriteRefused(f"cannot write {p}: {reason(OSError(code, os.strerror(code)))}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def serialisation_errno(e: BaseException) -> int | None:
    """The errno behind lxml's ``SerialisationError: IO_EFBIG`` (or IO_ENOSPC ...): lxml reports a failed write
    of its output file as this error, not as an OSError.  None for any other exception."""
    name = str(e)
    if type(e).__name__ == "SerialisationError" and name.startswith("IO_"):
        return getattr(errno, name[3:], None) or errno.EIO
    return None


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[None]:
    """Work that prepares ``path`` in temporary files (openpyxl writes each sheet to one in the temp folder):
    an OS error there (no space, file too large, permission) is one WriteRefused line naming ``path``."""
    where = f" (while writing temporary files in {tempfile.gettempdir()})"
    try:
        yield
    except FileFailed:
        raise
    except Exception as e:
        code = e.errno if isinstance(e, OSError) else serialisation_errno(e)
        if code is None and not isinstance(e, OSError):
            raise
        why = reason(e) if isinstance(e, OSError) else reason(OSError(code, os.strerror(code)))
        _release_quietly(e)
        raise WriteRefused(f"cannot write {os.fspath(path)}: {why}{where}") from None


def _release_quietly(e: BaseException) -> None:
    """Let go of the failed writer's frames now: a half-written lxml file object would otherwise report its own
    error again when it is collected ("Exception ignored in ...", a traceback on stderr after the one line)."""
    hook = sys.unraisablehook
    sys.unraisablehook = lambda *_: None
    try:
        tb = e.__traceback__
        while tb is not None:
            with contextlib.suppress(RuntimeError):   # a frame still running (this one) cannot be cleared
                tb.tb_frame.clear()
            tb = tb.tb_next
        gc.collect()
    finally:
        sys.unraisablehook = hook


def _fsync(name: str) -> None:
    fd = os.open(name, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as e:  # some file systems cannot fsync a read-only descriptor
        if e.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike, data: bytes, fmt: str, option: str = "-o") -> Path:
    """Write ``data`` to ``path`` atomically under the policy; returns ``path``."""
    with atomic(path, fmt, option) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
    return Path(os.fspath(path))


def write_with(path: str | os.PathLike, fmt: str, fill: Callable[[str], None], option: str = "-o") -> Path:
    """Let ``fill(tmp)`` write the file, then put it in place atomically under the policy."""
    with atomic(path, fmt, option) as tmp:
        fill(tmp)
    return Path(os.fspath(path))


#: Largest file read, per kind of input (bytes; MB = 1e6).  A Hugging Face config.json is a few kilobytes;
#: a scenarios or measured-data CSV of 100,000 rows is a few megabytes.
INPUT_LIMITS: dict[str, int] = {"config": 1_000_000, "scenarios": 10_000_000, "data": 10_000_000,
                                 "CA bundle": 10_000_000, "benchmark": 256 * 2**20}


def limit_words(kind: str) -> str:
    """'a regular file of at most 1 MB' (for --help and the refusals)."""
    return f"a regular file of at most {INPUT_LIMITS[kind] / 1e6:g} MB"


def read_input(path: str | os.PathLike, kind: str) -> bytes:
    """The bytes of a file the user gave as ``kind`` (config, scenarios, data).

    A path that is not a regular file (FIFO, device, folder, socket) or is over the kind's limit is
    InvalidInput (a wrong value: exit 2); a file that cannot be read is FileFailed (exit 1).  Both name
    the file.  The file is opened without blocking, so a FIFO swapped in after the check cannot hang the read.
    """
    limit = INPUT_LIMITS[kind]
    text = check_input(path, kind)
    try:
        fd = os.open(text, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise FileFailed(f"cannot read {kind} file {text}: {reason(e)}") from None
    try:
        _regular(os.fstat(fd), text, kind)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as e:
        raise FileFailed(f"cannot read {kind} file {text}: {reason(e)}") from None
    finally:
        os.close(fd)
    if size > limit:
        raise InvalidInput(f"{kind} file {text} is larger than {limit / 1e6:g} MB: give {limit_words(kind)}")
    return b"".join(chunks)


def check_input(path: str | os.PathLike, kind: str) -> str:
    """Refuse, without opening it, a path that is not a regular file within the kind's limit (as read_input)."""
    text = os.fspath(path)
    try:
        st = os.stat(text)
    except OSError as e:
        raise FileFailed(f"cannot read {kind} file {text}: {reason(e)}") from None
    _regular(st, text, kind)
    return text


def _regular(st: os.stat_result, text: str, kind: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(f"{kind} file {text}: it is {_kind(st.st_mode)}, not a regular file "
                           f"(give {limit_words(kind)})")
    if st.st_size > INPUT_LIMITS[kind]:
        raise InvalidInput(f"{kind} file {text} is {st.st_size / 1e6:,.1f} MB, larger than "
                           f"{INPUT_LIMITS[kind] / 1e6:g} MB: give {limit_words(kind)}")


def read_text(path: str | os.PathLike, what: str = "file", encoding: str = "utf-8") -> str:
    """A text file's contents, or one line naming it: cannot read (OSError) or not UTF-8 text (ValueError)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise FileFailed(f"cannot read {path}: {reason(e)}") from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        raise InvalidInput(f"{path}: not a UTF-8 text {what} (byte {e.start + 1} is 0x{raw[e.start]:02x})") from None


#: First characters that make a spreadsheet read a CSV cell as a formula (OWASP, "CSV Injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A text cell for a .csv that no spreadsheet runs as a formula: a leading = + - @ tab or CR gets a "'"
    (OWASP's advice; the csv module then quotes what needs quoting)."""
    return "'" + value if value.startswith(FORMULA_TRIGGERS) else value
