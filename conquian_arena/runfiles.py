"""The files of a run folder (a tournament's, every training recipe's): one process at a time,
each file written whole or not at all, never through a link.

- :class:`RunLock` / :func:`hold_folder`: one process per folder (``fcntl.flock`` on ``run.lock``,
  released by the operating system however the holder ends; the holder's pid, host and start
  time in it).  A second writer stops with :class:`RunFolderInUseError` naming the holder.
- :func:`check_folder`: a folder whose entries (and its sub-folders') are not plain files and
  folders is refused by name: a symbolic link (a folder copied, unpacked or handed over can hold
  one, and writing through it would change the file it points to), a FIFO, a socket, a device.
  :func:`hold_folder` checks the folder once its lock is held; every open below refuses the same
  again at the moment it opens (``O_NOFOLLOW``, then ``fstat``), for reading and writing alike.
- :func:`write_atomic`: a file is written under a temporary name of its own
  (``NAME.partial.PID-RANDOM.SUFFIX``, created exclusively, fsynced) and renamed into place: a
  reader sees the old file or the new one, never half; :func:`write_bytes` / :func:`write_text` /
  :func:`write_json` / :func:`copy_atomic` over it.  :func:`remove_partials` deletes what a killed
  writer left (only the lock's holder may: another writer's are live).
- :func:`commit_dir`: a folder of files (a checkpoint) replaces the old one together: it is
  written as ``NAME.partial/``, renamed ``NAME.ready/`` once complete, then swapped in;
  :func:`recover_dir` finishes or undoes an interrupted swap, so a checkpoint is whole or absent.
- The append-only tables: :func:`append_rows` (CSV rows), :func:`open_append` (a tournament's
  ``games.jsonl``, a log); a checkpoint records each table's size and hash (:func:`committed`)
  and :func:`cut_to` drops what a killed session added after it.
- :func:`file_event`: every write, rename and append above is one numbered *file event*.  With
  the environment variable ``CONQUIAN_KILL_AT=N`` the process ends (``os._exit``) at the N-th,
  as a kill would; :func:`kill_at` does the same in this process by raising :class:`Killed`
  (the kill fuzz of ``tests/test_run_kill.py``).
- A tournament's ``games.jsonl`` lines carry a ``check``: an HMAC-SHA256 of the rest of the line
  keyed by the run's secret, kept in :data:`KEY_FILE` beside it (:func:`sign_line`,
  :func:`check_problem`; the key is created readable by its owner only).

Every refusal is a :class:`RunFolderError` (a ``ValueError``) whose message is one line naming
the file and what to do; the commands print it as it is.  A full disk raises :class:`OSError`
with ``errno.ENOSPC`` like any other write error; :func:`disk_full` recognises it.

What the lines' check can and cannot detect is said in ``docs/tournaments.md``: it catches a
line edited, forged or copied in by anyone who does not hold the key file (a line taken from
another run folder fails too, its key being another); whoever can read the key can sign
anything, so a run whose bots play a function of their seeds can also be re-played in full on a
resume (``--verify``).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

KILL_ENV = "CONQUIAN_KILL_AT"
#: the exit status of a process ended by ``CONQUIAN_KILL_AT``
KILL_EXIT = 86
#: what a file being written carries in its name (``NAME.partial.PID-RANDOM.SUFFIX``)
PARTIAL = ".partial"
#: the run's secret, beside games.jsonl: 64 hexadecimal digits and a newline
KEY_FILE = "games.key"
#: the field of a games.jsonl line that holds its check (the last field of the line)
CHECK_FIELD = "check"
#: how deep :func:`check_folder` looks into a run folder's sub-folders
CHECK_DEPTH = 3
#: the endings of the files a run folder holds: a folder so named stands where a file belongs
FILE_SUFFIXES = (".json", ".jsonl", ".csv", ".log", ".lock", ".key", ".npz", ".zip", ".png", ".html", ".txt")

_SIGNED = re.compile(rb'\A(.*), "check": "([0-9a-f]{64})"\}\Z', re.S)
_KEY = re.compile(r"\A[0-9a-f]{64}\n?\Z")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO is opened without waiting for its other end, then refused


class RunFolderError(ValueError):
    """The run folder holds something a command cannot take (a link, a changed config, an edited
    table, a bad state); the message names it."""


class RunFolderInUseError(RunFolderError):
    """Another live process holds the run folder's lock."""


class Killed(BaseException):
    """Raised at the file event chosen by :func:`kill_at` (a ``BaseException``: nothing catches it
    on the way, as nothing could catch a kill)."""


# --------------------------------------------------------------------------- the kill switch


class KillSwitch:
    """The file-event counter and the event at which to stop (see the module docstring)."""

    def __init__(self) -> None:
        self.count = 0
        self.at: int | None = None
        self.raise_: bool = False
        self.names: list[str] = []
        env = os.environ.get(KILL_ENV)
        if env:
            self.at = int(env)

    def event(self, what: str) -> None:
        self.count += 1
        self.names.append(what)
        if self.at is not None and self.count == self.at:
            if self.raise_:
                raise Killed(f"killed at file event {self.count}: {what}")
            os._exit(KILL_EXIT)


SWITCH = KillSwitch()


def file_event(what: str) -> None:
    """Count one file event (a write, a rename, an append); the kill switch may stop here."""
    SWITCH.event(what)


def kill_at(n: int | None) -> None:
    """Raise :class:`Killed` at the ``n``-th file event from now (``None``: never); resets the count."""
    SWITCH.count, SWITCH.at, SWITCH.raise_, SWITCH.names = 0, n, n is not None, []


def events() -> list[str]:
    """The file events since the last :func:`kill_at` (or since the process began), in order."""
    return list(SWITCH.names)


def disk_full(err: BaseException) -> bool:
    """Whether ``err`` is a full disk (or an exhausted quota)."""
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


#: the errors of a file that is not what its name says (a folder, a link, a FIFO) where a library
#: outside this module opens it by path (a model's archive, a plot)
MISPLACED = {errno.EISDIR: "a folder", errno.ENOTDIR: "not a folder", errno.ELOOP: "a symbolic link",
             errno.ENXIO: "a FIFO or a socket"}  # fmt: skip


def misplaced(err: BaseException) -> str | None:
    """The one line for an ``OSError`` raised by a file of the run folder that is not a regular file
    (:data:`MISPLACED`), or None for any other error."""
    if not isinstance(err, OSError) or err.errno not in MISPLACED:
        return None
    return str(refusal(err.filename or "a file of the run folder", MISPLACED[err.errno]))


# --------------------------------------------------------------------------- no links, no FIFOs


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words."""
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))  # fmt: skip
    for test, name in kinds:
        if test(mode):
            return name
    return "not a regular file"


def refusal(path: str | Path, what: str, expected: str = "a regular file") -> RunFolderError:
    """The one-line error for ``path``, which is ``what`` where ``expected`` belongs."""
    return RunFolderError(f"{path} is {what}, not {expected}: a run folder's files are never followed through "
                          "links or read from FIFOs; remove it (or restore the file it stood for), or use "
                          "another folder")  # fmt: skip


def check_entry(path: str | Path, expected: str = "file") -> bool:
    """Whether ``path`` exists, as a regular file (``expected="file"``) or a real folder
    (``"folder"``); a link or anything else in its place raises :func:`refusal`."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise refusal(Path(path).parent, "a file", "a folder") from None
    ok = stat.S_ISDIR(mode) if expected == "folder" else stat.S_ISREG(mode)
    if not ok:
        raise refusal(path, kind_of(mode), "a folder" if expected == "folder" else "a regular file")
    return True


def check_folder(folder: str | Path, depth: int = CHECK_DEPTH) -> None:
    """Refuse (:func:`refusal`, naming the first) any entry of ``folder`` and of its sub-folders
    (``depth`` levels) that is not a regular file or a real folder: a symbolic link, dangling or
    not, a FIFO, a socket, a device, and a folder named as a file (:data:`FILE_SUFFIXES`)."""
    folder = Path(folder)
    if not check_entry(folder, "folder"):
        return
    with os.scandir(folder) as entries:
        found = sorted(entries, key=lambda e: e.name)
    for entry in found:
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISDIR(mode) and entry.name.endswith(FILE_SUFFIXES):
            raise refusal(entry.path, "a folder")
        if stat.S_ISDIR(mode):
            if depth > 0:
                check_folder(entry.path, depth - 1)
        elif not stat.S_ISREG(mode):
            raise refusal(entry.path, kind_of(mode))


def _check_fd(fd: int, path: Any) -> int:
    """``fd`` when it is a regular file's; else it is closed and :func:`refusal` raised."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise refusal(path, kind_of(mode))
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return fd


def open_fd(path: str | Path, flags: int, mode: int = 0o644) -> int:
    """``os.open(path, flags)`` of a regular file, never through a link (``O_NOFOLLOW``) nor of a
    FIFO or a device (``fstat``); anything else in its place raises :func:`refusal`."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW on a link (EMLINK: FreeBSD)
            raise refusal(path, "a symbolic link") from None
        if err.errno == errno.EISDIR:
            raise refusal(path, "a folder") from None
        if err.errno == errno.ENXIO:  # a FIFO without a reader, a socket
            raise refusal(path, "a FIFO or a socket") from None
        raise
    return _check_fd(fd, path)


def _opener(mode: int) -> Callable[[str, int], int]:
    return lambda path, flags: open_fd(path, flags, mode)


def open_file(path: str | Path, how: str = "r", *, mode: int = 0o644, **kwargs: Any) -> IO[Any]:
    """``open(path, how)`` of a regular file only (:func:`open_fd`); ``mode``: the permission bits
    of a file it creates."""
    return open(path, how, opener=_opener(mode), **kwargs)


def read_bytes(path: str | Path) -> bytes:
    """The bytes of the regular file ``path`` (no link, no FIFO)."""
    with open_file(path, "rb") as f:
        return f.read()


def read_text(path: str | Path) -> str:
    """The text (UTF-8) of the regular file ``path`` (no link, no FIFO)."""
    return read_bytes(path).decode("utf-8")


def open_append(path: str | Path, binary: bool = False, mode: int = 0o644) -> IO[Any]:
    """``path`` opened to append to (made when absent), a regular file only."""
    return open_file(path, "ab" if binary else "a", mode=mode, **({} if binary else {"encoding": "utf-8"}))


def append_line(path: str | Path, line: str) -> None:
    """Append ``line`` and a newline to the log ``path`` (a regular file only)."""
    with open_append(path) as f:
        f.write(line + "\n")


# --------------------------------------------------------------------------- whole files


def partial_path(path: Path) -> Path:
    """The temporary name of ``path`` while it is written: ``NAME.partial.PID-RANDOM.SUFFIX``, its own
    for each writer (two processes writing one name never share a temporary file) and its suffix
    kept (``np.savez`` and SB3's ``save`` add theirs to a name without it)."""
    return path.with_name(f"{path.stem}{PARTIAL}.{os.getpid()}-{secrets.token_hex(4)}{path.suffix}")


def fsync_path(path: Path) -> None:
    """Flush ``path`` (a file, or a folder's entries) to the disk; folders where the system cannot."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as err:
        if stat.S_ISREG(os.fstat(fd).st_mode) or disk_full(err):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str | Path, write: Callable[[Path], Any], mode: int | None = None) -> Path:
    """``write(tmp)`` writes the content to ``tmp`` (a fresh name of this writer's, already created
    with the permission bits ``mode`` when given); then ``tmp`` is renamed to ``path`` (two file
    events: the temporary file written, the rename).  A link, a folder or a FIFO at ``path`` is
    refused (:func:`refusal`) before anything is written; a failed ``write`` leaves nothing behind."""
    path = Path(path)
    check_entry(path)
    tmp = partial_path(path)
    try:
        if mode is not None:  # created with its bits: never readable by others, not even for a moment
            os.close(open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode))
        write(tmp)
        fsync_path(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    file_event(f"wrote {tmp}")
    check_entry(path)  # nothing put in its place meanwhile
    os.replace(tmp, path)
    fsync_path(path.parent)
    file_event(f"renamed {path}")
    return path


def write_bytes(path: str | Path, data: bytes | str, mode: int | None = None) -> Path:
    """``path`` holds ``data`` (text as UTF-8), atomically (``mode``: its permission bits)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data

    def write(tmp: Path) -> None:
        with open_file(tmp, "r+b" if mode is not None else "wb") as f:
            f.write(raw)

    return write_atomic(path, write, mode)


def write_text(path: str | Path, text: str) -> Path:
    """``path`` holds ``text`` (UTF-8), atomically."""
    return write_bytes(path, text)


def write_json(path: str | Path, data: Any) -> Path:
    return write_text(path, json.dumps(data, indent=2) + "\n")


def copy_atomic(src: str | Path, dest: str | Path) -> Path:
    """A copy of ``src`` (a regular file) at ``dest``, atomically."""

    def write(tmp: Path) -> None:
        with open_file(src, "rb") as f, open_file(tmp, "wb") as g:
            shutil.copyfileobj(f, g)

    return write_atomic(dest, write)


def remove_partials(folder: str | Path, subfolders: tuple[str, ...] = ()) -> list[str]:
    """Delete the temporary files a killed writer left in ``folder`` (and its ``subfolders``):
    ``*.partial.*``, and an older version's ``*.partial``; their names.  Only the holder of the
    folder's :class:`RunLock` may call it (another writer's are live)."""
    folder = Path(folder)
    gone = []
    for where in (folder, *(folder / s for s in subfolders)):
        if not check_entry(where, "folder"):
            continue
        for path in sorted({*where.glob(f"*{PARTIAL}.*"), *where.glob(f"*{PARTIAL}")}):
            if stat.S_ISREG(os.lstat(path).st_mode):
                path.unlink()
                gone.append(path.relative_to(folder).as_posix())
    return gone


def set_aside(path: Path, why: str) -> Path:
    """Rename ``path`` to ``path.WHY`` (``path.WHY2`` ... when taken): kept, out of the way."""
    for k in range(1, 1000):
        dest = path.with_name(f"{path.name}.{why}{k if k > 1 else ''}")
        if not os.path.lexists(dest):
            os.replace(path, dest)
            return dest
    raise RunFolderError(f"{path}: too many set-aside copies ({path.name}.{why}*); delete some")


# --------------------------------------------------------------------------- append-only tables


def append_rows(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` to the CSV file ``path`` (its header from the first row when it is new or empty);
    one file event.  A kill can leave part of a row: the run state's byte count cuts it (:func:`cut_to`)."""
    if not rows:
        return
    path = Path(path)
    with open_file(path, "a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        if os.fstat(f.fileno()).st_size == 0:
            w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    file_event(f"appended {path}")


def digest(path: Path, size: int | None = None) -> str:
    """The SHA-256 of the first ``size`` bytes of ``path`` (all of it when ``None``)."""
    h = hashlib.sha256()
    with open_file(path, "rb") as f:
        left = size
        while left is None or left > 0:
            block = f.read(1 << 20 if left is None else min(1 << 20, left))
            if not block:
                break
            h.update(block)
            if left is not None:
                left -= len(block)
    return h.hexdigest()


def committed(path: Path) -> dict[str, Any]:
    """What a checkpoint records of an append-only file: its size and hash."""
    with open_file(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
    return {"bytes": size, "sha256": digest(path)}


def cut_to(path: Path, record: dict[str, Any] | None) -> str | None:
    """Make ``path`` what the checkpoint's ``record`` (:func:`committed`; ``None``: no such file then)
    says: cut what was appended after it.  Returns what was done (for the log), ``None`` when nothing.
    Raises :class:`RunFolderError` when the file lost or changed bytes the checkpoint holds, or
    when it is a link or not a regular file."""
    exists = check_entry(path)
    if record is None:
        if exists:
            path.unlink()
            return f"removed {path.name} (written after the last checkpoint)"
        return None
    size = path.stat().st_size if exists else 0
    if size < record["bytes"]:
        raise RunFolderError(f"{path} holds {size} bytes, the last checkpoint {record['bytes']}: it was cut or "
                             "replaced since (restore it, or start a new run)")  # fmt: skip
    if digest(path, record["bytes"]) != record["sha256"]:
        raise RunFolderError(f"{path}: its first {record['bytes']} bytes differ from the last checkpoint's "
                             "(edited since? restore it, or start a new run)")  # fmt: skip
    if size > record["bytes"]:
        fd = open_fd(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, record["bytes"])
        finally:
            os.close(fd)
        return f"cut {size - record['bytes']} bytes from {path.name} (written after the last checkpoint)"
    return None


# --------------------------------------------------------------------------- folders committed together


def staging_dir(final: Path) -> Path:
    """An empty folder to write the next ``final`` into (:func:`commit_dir` puts it in place)."""
    staged = final.with_name(final.name + PARTIAL)
    if check_entry(staged, "folder"):
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    return staged


def commit_dir(staged: Path, final: Path) -> None:
    """Put the complete folder ``staged`` in the place of ``final``: renamed ``final.ready`` (from
    then on it is the checkpoint), the old ``final`` renamed ``final.old``, ``final.ready`` renamed
    ``final``, ``final.old`` deleted (a file event each; :func:`recover_dir` completes a kill)."""
    ready, old = final.with_name(final.name + ".ready"), final.with_name(final.name + ".old")
    for path in (ready, old, final):
        check_entry(path, "folder")
    fsync_path(staged)
    os.rename(staged, ready)
    fsync_path(final.parent)
    file_event(f"renamed {ready}")
    if final.exists():
        if old.exists():
            shutil.rmtree(old)
        os.rename(final, old)
        file_event(f"renamed {old}")
    os.rename(ready, final)
    fsync_path(final.parent)
    file_event(f"renamed {final}")
    if old.exists():
        shutil.rmtree(old)
        file_event(f"deleted {old}")


def recover_dir(final: Path) -> str | None:
    """Finish a :func:`commit_dir` that a kill interrupted (``final.ready`` is complete and newest),
    drop half-written ``final.partial`` and a left-over ``final.old``; what was done, for the log."""
    staged, ready, old = (final.with_name(final.name + s) for s in (PARTIAL, ".ready", ".old"))
    for path in (final, staged, ready, old):
        check_entry(path, "folder")
    done = []
    if ready.exists():
        if final.exists():
            if old.exists():
                shutil.rmtree(old)
            os.rename(final, old)
        os.rename(ready, final)
        done.append(f"completed the checkpoint {ready.name} a kill interrupted")
    for path, what in ((old, "the replaced checkpoint"), (staged, "a half-written checkpoint")):
        if path.exists():
            shutil.rmtree(path)
            done.append(f"deleted {path.name} ({what})")
    return "; ".join(done) or None


# --------------------------------------------------------------------------- one process per folder


class RunLock:
    """An exclusive ``fcntl.flock`` on ``FOLDER/run.lock`` while a command works in the folder.

    The file says who holds it (``pid``, ``host``, ``since``); a holder that ends normally empties
    it.  The operating system drops the lock of a process however it ends, so a lock file that
    still names a holder when the lock is free was left by a killed process: :meth:`acquire` takes
    it over and returns that holder for the log.  A link, a folder or a FIFO named ``run.lock`` is
    refused (:func:`refusal`).  Without ``fcntl`` (Windows) nothing is locked.
    """

    NAME = "run.lock"

    def __init__(self, folder: str | Path):
        self.path = Path(folder) / self.NAME
        self.fd: int | None = None

    def acquire(self) -> dict[str, Any] | None:
        """Hold the lock; the stale holder's record when one was taken over.  Raises
        :class:`RunFolderInUseError` naming the live holder."""
        try:
            import fcntl
        except ImportError:  # no flock here: nothing to hold
            return None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_fd(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self.read(fd)
            os.close(fd)
            who = (f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}" if holder
                   else "another process")  # fmt: skip
            raise RunFolderInUseError(f"{self.path.parent} is in use by {who} (its lock {self.path}); "
                                      "wait for that run to end or stop it") from None  # fmt: skip
        stale = self.read(fd)
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        os.fsync(fd)
        self.fd = fd
        return stale or None

    @staticmethod
    def read(fd: int) -> dict[str, Any]:
        try:
            data = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
        except (ValueError, UnicodeDecodeError, RecursionError):
            return {"pid": "?", "host": "?", "since": "? (an unreadable lock file)"}
        return data if isinstance(data, dict) else {}

    def release(self) -> None:
        """Empty the lock file and drop the lock."""
        if self.fd is None:
            return
        import fcntl

        try:
            os.ftruncate(self.fd, 0)
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


@contextlib.contextmanager
def hold_folder(folder: str | Path, log: Callable[[str], Any] | None = None) -> Iterator[None]:
    """Hold ``folder``'s :class:`RunLock` while the block runs (the folder made if need be), its
    entries checked first (:func:`check_folder`: no link, no FIFO); :class:`RunFolderInUseError`
    naming the holder when another live process has it.  A lock taken over from a killed holder
    is said through ``log``."""
    if os.path.lexists(folder) and not os.path.isdir(folder):  # the folder itself may be a link to one
        raise refusal(folder, kind_of(os.lstat(folder).st_mode), "a folder")
    lock = RunLock(folder)
    stale = lock.acquire()
    try:
        check_folder(folder)
        if stale and log is not None:
            log(f"took over the lock of pid {stale.get('pid')} on {stale.get('host')} (since {stale.get('since')}): "
                "that process ended without releasing it")  # fmt: skip
        yield
    finally:
        lock.release()


# --------------------------------------------------------------------------- a tournament's checked lines


def new_key() -> bytes:
    """A fresh secret for a run folder (32 random bytes, as hexadecimal)."""
    return secrets.token_hex(32).encode("ascii")


def read_key(folder: str | Path) -> bytes | None:
    """The run's secret in ``folder``, or None when there is no :data:`KEY_FILE`.  Raises
    :class:`RunFolderError` for a key file that is not 64 hexadecimal digits, or not a regular file."""
    path = Path(folder) / KEY_FILE
    try:
        text = read_bytes(path)
    except FileNotFoundError:
        return None
    except RunFolderError:
        raise
    except OSError as err:  # no permission to read it
        raise RunFolderError(
            f"{path} cannot be read as a run key ({err.strerror}): the lines of games.jsonl cannot be checked. "
            "Remove it and resume with --verify (every game re-played), or choose another --out"
        ) from None
    if not _KEY.match(text.decode("ascii", "replace")):
        raise RunFolderError(
            f"{path} is not a run key (64 hexadecimal digits expected): the lines of games.jsonl cannot be "
            f"checked. Delete it and resume with --verify (every game re-played), or choose another --out"
        )
    return text.strip()


def write_key(folder: str | Path, key: bytes) -> None:
    """Keep ``key`` in ``folder``'s :data:`KEY_FILE`, readable by its owner only from its creation."""
    write_bytes(Path(folder) / KEY_FILE, key + b"\n", mode=0o600)


def _mac(key: bytes, text: bytes) -> str:
    return hmac.new(key, text, hashlib.sha256).hexdigest()


def sign_line(text: str, key: bytes) -> str:
    """A JSON object's text (``json.dumps``, ASCII) with its check added as the last field."""
    if not (text.startswith("{") and text.endswith("}")) or text == "{}":
        raise ValueError("only a non-empty JSON object's text can be signed")
    return f'{text[:-1]}, "{CHECK_FIELD}": "{_mac(key, text.encode("utf-8"))}"}}'


def check_problem(line: bytes, key: bytes) -> str | None:
    """Why ``line`` (a games.jsonl line, without its newline) does not carry a valid check for
    ``key``, or None when it does."""
    match = _SIGNED.match(line)
    if match is None:
        return f"a line without its check (the {CHECK_FIELD!r} field this run writes last on every line)"
    if not hmac.compare_digest(_mac(key, match.group(1) + b"}").encode("ascii"), match.group(2)):
        return (
            "a line whose check does not match it (edited, forged, or from another run folder: "
            f"only this run's {KEY_FILE} signs its lines)"
        )
    return None


__all__ = [
    "CHECK_FIELD",
    "FILE_SUFFIXES",
    "KEY_FILE",
    "KILL_ENV",
    "KILL_EXIT",
    "PARTIAL",
    "Killed",
    "RunFolderError",
    "RunFolderInUseError",
    "RunLock",
    "append_line",
    "append_rows",
    "check_entry",
    "check_folder",
    "check_problem",
    "commit_dir",
    "committed",
    "copy_atomic",
    "cut_to",
    "digest",
    "disk_full",
    "events",
    "file_event",
    "fsync_path",
    "hold_folder",
    "kill_at",
    "MISPLACED",
    "misplaced",
    "new_key",
    "open_append",
    "open_fd",
    "open_file",
    "partial_path",
    "read_bytes",
    "read_key",
    "read_text",
    "recover_dir",
    "refusal",
    "remove_partials",
    "set_aside",
    "sign_line",
    "staging_dir",
    "write_atomic",
    "write_bytes",
    "write_json",
    "write_key",
    "write_text",
]
