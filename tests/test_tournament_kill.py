"""A tournament killed at any file event resumes to the very results of an uninterrupted run.

The slow fuzz runs the short tournament of :mod:`tests.kill_hook` in a subprocess killed
(``os._exit``, no cleanup) at each of its file events in turn, a write cut in half or a
rename not done, resumes it (killed again at the resume's own event of that number, then
resumed to the end), and compares the folder with an uninterrupted run's.  The fast
test does a few of those kills in this process (the hook raises instead of exiting).
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conquian_arena.game_lines import ResumeWarning
from conquian_arena.tournament import run_tournament

from .kill_hook import KILLED, KNOBS, SPECS, Hook

ROOT = Path(__file__).resolve().parent.parent
#: what differs between two runs of one tournament: the thinking times, the folder, the key's checks
UNSTABLE = ("think_time", "max_think", "check")


def _games(out: Path) -> list[dict]:
    games = [json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()]
    return sorted(({k: v for k, v in g.items() if k not in UNSTABLE} for g in games), key=lambda g: g["index"])


def _summary(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in ("timing", "out_dir")}


def _files(out: Path) -> set[str]:
    return {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"games.rejected.txt"}


def _assert_same_folder(out: Path, reference: Path, where: str) -> None:
    assert _files(out) == _files(reference), where  # no file missing, no partial file left
    assert _games(out) == _games(reference), where
    assert _summary(out) == _summary(reference), where
    for name in ("summary.csv", "ratings.csv"):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), (where, name)
    with warnings.catch_warnings():  # and the resumed folder is a clean one: another resume warns of nothing
        warnings.simplefilter("error", ResumeWarning)
        run_tournament(SPECS, out=out, **KNOBS)
    rejected = out / "games.rejected.txt"
    if rejected.exists():  # only the line the kill cut short is ever set aside
        for line in rejected.read_text().splitlines():
            assert "cut short when the run stopped writing it" in line, (where, line)


class Killed(BaseException):
    """The in-process stand-in for a kill (a BaseException: nothing on the way catches it)."""


def _stop() -> None:
    raise Killed


def _run_hooked(out: Path, kill_at: int) -> list[str]:
    hook = Hook(str(out), kill_at, _stop)
    hook.install()
    try:
        run_tournament(SPECS, out=out, **KNOBS)
    finally:
        hook.uninstall()
    return hook.events


def test_a_tournament_killed_at_a_torn_line_a_rename_or_the_last_write_resumes_exactly(tmp_path):
    # before: config.json and the summaries were written in place (a kill left them half
    # written: the resume refused the folder's config.json as invalid JSON)
    reference = tmp_path / "ref"
    events = _run_hooked(reference, 0)
    first = {what: next((i for i, e in enumerate(events) if e.startswith(what)), None) for what in ("write", "replace")}
    picks = {
        "config.json half written": first["write"],
        "config.json never renamed into place": first["replace"],
        "the first game's line cut in half": events.index("write games.jsonl"),
        "the last event": len(events) - 1,
    }
    assert events[0].startswith("write config.partial.")  # its own temporary name, then renamed
    for where, index in picks.items():
        if index is None:
            continue
        out = tmp_path / f"k{index}"
        with pytest.raises(Killed):
            _run_hooked(out, index + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResumeWarning)
            run_tournament(SPECS, out=out, **KNOBS)
        _assert_same_folder(out, reference, where)


@pytest.mark.slow
def test_a_tournament_killed_at_every_file_event_resumes_exactly(tmp_path):
    def child(kill_at: int, out: Path) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "tests.kill_hook", str(kill_at), str(out)]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)

    reference = tmp_path / "ref"
    done = child(0, reference)
    assert done.returncode == 0, done.stderr
    events = json.loads(done.stdout.splitlines()[-1])
    assert sum(e == "write games.jsonl" for e in events) == 4  # a line per game
    for n, what in enumerate(events, 1):
        out = tmp_path / f"k{n}"
        killed = child(n, out)
        assert killed.returncode == KILLED, (n, what, killed.stderr)
        # the resume killed too, at its own n-th event (it may have fewer: then it finishes)
        again = child(n, out)
        assert again.returncode in (0, KILLED), (n, what, again.stderr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResumeWarning)
            run_tournament(SPECS, out=out, **KNOBS)
        _assert_same_folder(out, reference, f"killed at event {n}, {what}")
