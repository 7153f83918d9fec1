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
callers get the safe defaults.  This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import stat
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
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


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
