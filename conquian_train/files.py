"""Every file a training run writes goes through here: complete or absent, whatever stops the process.

- :func:`write_atomic`: a file is written under a temporary name of its own
  (``NAME.partial.PID-RANDOM.SUFFIX``, fsynced) and renamed into place: a reader sees the old
  file or the new one, never half.
- :func:`commit_dir`: a folder of files (a checkpoint) replaces the old one together: it is
  written as ``NAME.partial/``, renamed ``NAME.ready/`` once complete, then swapped in;
  :func:`recover_dir` finishes or undoes an interrupted swap, so a checkpoint is whole or absent.
- :func:`append_rows`: rows appended to a CSV file (the run state records how many bytes of
  each CSV belong to the checkpoint; :func:`cut_to` drops what a killed session added after it).
- :class:`RunLock`: one process per run folder (``fcntl.flock`` on ``run.lock``, released by
  the operating system however the holder ends; the holder's pid, host and start time in it);
  :func:`hold_folder` holds it around a block.
- :func:`file_event`: every write, rename and append above is one numbered *file event*.  With
  the environment variable ``CONQUIAN_KILL_AT=N`` the process ends (``os._exit``) at the N-th,
  as a kill would; :func:`kill_at` does the same in this process by raising :class:`Killed`
  (the kill fuzz of ``tests/test_run_kill.py``).

A full disk raises :class:`OSError` with ``errno.ENOSPC`` like any other write error;
:func:`disk_full` recognises it (the commands turn it into one line saying the run is intact).
"""

from __future__ import annotations

import contextlib
import csv
import errno
import hashlib
import json
import os
import secrets
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

KILL_ENV = "CONQUIAN_KILL_AT"
#: the exit status of a process ended by ``CONQUIAN_KILL_AT``
KILL_EXIT = 86
PARTIAL = ".partial"


class RunFolderError(ValueError):
    """The run folder holds something a resume cannot take (a changed config, an edited table, a bad state)."""


class Killed(BaseException):
    """Raised at the file event chosen by :func:`kill_at` (a ``BaseException``: nothing catches it
    on the way, as nothing could catch a kill)."""


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


def partial_path(path: Path) -> Path:
    """The temporary name of ``path`` while it is written: ``NAME.partial.PID-RANDOM.SUFFIX``, its own
    for each writer (two processes writing one name never share a temporary file) and its suffix
    kept (``np.savez`` and SB3's ``save`` add theirs to a name without it)."""
    return path.with_name(f"{path.stem}{PARTIAL}.{os.getpid()}-{secrets.token_hex(4)}{path.suffix}")


def fsync_path(path: Path) -> None:
    """Flush ``path`` (a file, or a folder's entries) to the disk; folders where the system cannot."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as err:
        if path.is_file() or disk_full(err):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """``write(tmp)`` writes the content to ``tmp``; then ``tmp`` is renamed to ``path`` (two file
    events: the temporary file written, the rename).  A failed ``write`` leaves nothing behind."""
    path = Path(path)
    tmp = partial_path(path)
    try:
        write(tmp)
        fsync_path(tmp)
    except Exception:
        tmp.unlink(missing_ok=True)
        raise
    file_event(f"wrote {tmp}")
    os.replace(tmp, path)
    fsync_path(path.parent)
    file_event(f"renamed {path}")
    return path


def write_text(path: str | Path, text: str) -> Path:
    """``path`` holds ``text`` (UTF-8), atomically."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | Path, data: Any) -> Path:
    return write_text(path, json.dumps(data, indent=2) + "\n")


def copy_atomic(src: str | Path, dest: str | Path) -> Path:
    """A copy of ``src`` at ``dest``, atomically."""
    return write_atomic(dest, lambda tmp: shutil.copyfile(src, tmp))


def append_rows(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` to the CSV file ``path`` (its header from the first row when it is new or empty);
    one file event.  A kill can leave part of a row: the run state's byte count cuts it (:func:`cut_to`)."""
    if not rows:
        return
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new:
            w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())
    file_event(f"appended {path}")


def digest(path: Path, size: int | None = None) -> str:
    """The SHA-256 of the first ``size`` bytes of ``path`` (all of it when ``None``)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
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
    return {"bytes": path.stat().st_size, "sha256": digest(path)}


def cut_to(path: Path, record: dict[str, Any] | None) -> str | None:
    """Make ``path`` what the checkpoint's ``record`` (:func:`committed`; ``None``: no such file then)
    says: cut what was appended after it.  Returns what was done (for the log), ``None`` when nothing.
    Raises :class:`RunFolderError` when the file lost or changed bytes the checkpoint holds."""
    if record is None:
        if path.exists():
            path.unlink()
            return f"removed {path.name} (written after the last checkpoint)"
        return None
    size = path.stat().st_size if path.exists() else 0
    if size < record["bytes"]:
        raise RunFolderError(f"{path} holds {size} bytes, the last checkpoint {record['bytes']}: it was cut or "
                             "replaced since (restore it, or start a new run)")  # fmt: skip
    if digest(path, record["bytes"]) != record["sha256"]:
        raise RunFolderError(f"{path}: its first {record['bytes']} bytes differ from the last checkpoint's "
                             "(edited since? restore it, or start a new run)")  # fmt: skip
    if size > record["bytes"]:
        os.truncate(path, record["bytes"])
        return f"cut {size - record['bytes']} bytes from {path.name} (written after the last checkpoint)"
    return None


# --------------------------------------------------------------------------- folders committed together


def staging_dir(final: Path) -> Path:
    """An empty folder to write the next ``final`` into (:func:`commit_dir` puts it in place)."""
    staged = final.with_name(final.name + PARTIAL)
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    return staged


def commit_dir(staged: Path, final: Path) -> None:
    """Put the complete folder ``staged`` in the place of ``final``: renamed ``final.ready`` (from
    then on it is the checkpoint), the old ``final`` renamed ``final.old``, ``final.ready`` renamed
    ``final``, ``final.old`` deleted (a file event each; :func:`recover_dir` completes a kill)."""
    ready, old = final.with_name(final.name + ".ready"), final.with_name(final.name + ".old")
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


def remove_partials(folder: Path) -> list[str]:
    """Delete the temporary files (``*.partial.*``) a killed writer left in ``folder``; their names.
    Only the holder of the folder's :class:`RunLock` may call it (another writer's are live)."""
    gone = []
    for path in sorted(folder.glob(f"*{PARTIAL}.*")):
        if path.is_file():
            path.unlink()
            gone.append(path.name)
    return gone


def set_aside(path: Path, why: str) -> Path:
    """Rename ``path`` to ``path.WHY`` (``path.WHY2`` ... when taken): kept, out of the way."""
    for k in range(1, 1000):
        dest = path.with_name(f"{path.name}.{why}{k if k > 1 else ''}")
        if not dest.exists():
            os.replace(path, dest)
            return dest
    raise RunFolderError(f"{path}: too many set-aside copies ({path.name}.{why}*); delete some")


# --------------------------------------------------------------------------- one process per folder


class RunFolderInUseError(RuntimeError):
    """Another live process holds the run folder's lock."""


class RunLock:
    """An exclusive ``fcntl.flock`` on ``FOLDER/run.lock`` while a command works in the folder.

    The file says who holds it (``pid``, ``host``, ``since``); a holder that ends normally empties
    it.  The operating system drops the lock of a process however it ends, so a lock file that
    still names a holder when the lock is free was left by a killed process: :meth:`acquire` takes
    it over and returns that holder for the log.  Without ``fcntl`` (Windows) nothing is locked.
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
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
        except (ValueError, UnicodeDecodeError):
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
    """Hold ``folder``'s :class:`RunLock` while the block runs (the folder made if need be);
    :class:`RunFolderInUseError` naming the holder when another live process has it.  A lock
    taken over from a killed holder is said through ``log``."""
    lock = RunLock(folder)
    stale = lock.acquire()
    try:
        if stale and log is not None:
            log(f"took over the lock of pid {stale.get('pid')} on {stale.get('host')} (since {stale.get('since')}): "
                "that process ended without releasing it")  # fmt: skip
        yield
    finally:
        lock.release()
