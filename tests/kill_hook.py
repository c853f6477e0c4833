"""A kill at the Nth file event of a run, for the kill fuzz of tournaments (tests/test_tournament_kill.py).

:func:`install` watches every file opened for writing under a folder (each ``write`` is an
event) and every ``os.replace`` / ``os.rename`` into it (an event); at event ``kill_at`` it
stops the run: a write is cut in half first (the half is flushed: a torn write), a rename
does not happen.  ``python -m tests.kill_hook N FOLDER`` runs the fuzz's short tournament
in FOLDER under it and exits with :data:`KILLED` at event N (``os._exit``: no cleanup, as a
kill), or prints the events it saw and exits 0 when the run has fewer.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any

#: the exit status of a run stopped by the hook
KILLED = 77
#: the fuzz's tournament: a few deterministic games, every file the folder can hold
SPECS = ["greedy", "random"]
KNOBS = {"games": 4, "seed": 7, "jobs": 1, "bootstrap": 20, "plot": False, "progress": False}


class Watched:
    """A file opened for writing whose every ``write`` is an event."""

    def __init__(self, f: Any, hook: Hook, name: str):
        self._f, self._hook, self._name = f, hook, name

    def write(self, data: Any) -> int:
        if self._hook.event(f"write {self._name}"):
            self._f.write(data[: len(data) // 2])
            self._f.flush()
            self._hook.stop()
        return self._f.write(data)

    def __enter__(self) -> Watched:
        self._f.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._f.__exit__(*exc)

    def __iter__(self) -> Any:
        return iter(self._f)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


class Hook:
    """The events under ``folder`` so far (``events``: their descriptions) and the stop at ``kill_at`` (0: never)."""

    def __init__(self, folder: str, kill_at: int, stop: Callable[[], None]):
        self.folder = os.path.realpath(folder) + os.sep
        self.kill_at, self.stop = kill_at, stop
        self.events: list[str] = []
        self._saved: list[tuple[Any, str, Any]] = []

    def ours(self, path: Any) -> str | None:
        """``path`` relative to the folder when it is in it, else None."""
        try:
            real = os.path.realpath(os.fspath(path))
        except TypeError:  # a file descriptor
            return None
        return real[len(self.folder) :] if real.startswith(self.folder) else None

    def event(self, what: str) -> bool:
        self.events.append(what)
        return len(self.events) == self.kill_at

    def install(self) -> None:
        real_open, real_replace, real_rename = io.open, os.replace, os.rename

        def watched_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            f = real_open(file, mode, *args, **kwargs)
            name = self.ours(file) if any(c in mode for c in "wax+") else None
            return f if name is None else Watched(f, self, name)

        def renamer(real: Callable[..., None], verb: str) -> Callable[..., None]:
            def watched(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
                name = self.ours(dst)
                if name is not None and self.event(f"{verb} {name}"):
                    self.stop()
                real(src, dst, *args, **kwargs)

            return watched

        for owner, attr, value in [
            (builtins, "open", watched_open),
            (io, "open", watched_open),
            (os, "replace", renamer(real_replace, "replace")),
            (os, "rename", renamer(real_rename, "rename")),
        ]:
            self._saved.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, value)

    def uninstall(self) -> None:
        while self._saved:
            owner, attr, value = self._saved.pop()
            setattr(owner, attr, value)


def main() -> None:
    kill_at, folder = int(sys.argv[1]), sys.argv[2]
    hook = Hook(folder, kill_at, lambda: os._exit(KILLED))
    hook.install()
    from conquian_arena.tournament import run_tournament

    run_tournament(SPECS, out=folder, **KNOBS)
    hook.uninstall()
    print(json.dumps(hook.events))


if __name__ == "__main__":
    main()
