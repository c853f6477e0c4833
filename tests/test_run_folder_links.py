"""A run folder never writes through a link: every file of every recipe's folder and of a
tournament's, replaced by a link to a victim file, a dangling link, a folder or a FIFO, is refused
in one line naming it, and the victim is unchanged.

The recipes come from the recipe registry (:func:`conquian_train.recipes.every`, each at its
``quick`` size), the files from what each run actually wrote: a new recipe, or a new file of one,
joins with no edit here.  The library's own opens (:mod:`conquian_arena.runfiles`) are tried one by
one below, without the folder check that :func:`~conquian_arena.runfiles.hold_folder` makes first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conquian_arena import runfiles
from conquian_arena.runfiles import RunFolderError, RunFolderInUseError, RunLock

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")
train = pytest.importorskip("train")
from conquian_train import recipes  # noqa: E402
from conquian_train.recipes import Recipe  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("link", "dangling", "folder", "fifo")
VICTIM = b"the user's own file, 33 bytes.\n\n\n"
TOURNAMENT = ["greedy", "random", "--games", "4", "--seed", "3", "-j", "1", "--no-plot", "--html", "--bootstrap", "20"]


def _recipes() -> list[Recipe]:
    found = [r for r in recipes.every() if isinstance(r, Recipe)]
    assert found and len(found) == len(recipes.names())
    return found


def _files(folder: Path) -> list[str]:
    """Every file a run left in ``folder`` (its sub-folders' too), as relative paths."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _plant(path: Path, kind: str, victim: Path) -> None:
    """``path`` (a file of the folder) replaced by ``kind``."""
    path.unlink()
    if kind == "link":
        path.symlink_to(victim)
    elif kind == "dangling":
        path.symlink_to(victim.with_name("not-there"))
    elif kind == "folder":
        path.mkdir()
        (path / "inside").write_bytes(b"x")
    else:
        os.mkfifo(path)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    os.utime(victim, (1_000_000, 1_000_000))
    return victim


def _victim_unchanged(victim: Path) -> None:
    assert victim.read_bytes() == VICTIM and victim.stat().st_mtime == 1_000_000
    assert not victim.with_name("not-there").exists()  # a dangling link's target never made


def _one_line(err: str, name: str) -> None:
    """One error line, naming ``name``, and no traceback (lines saying what is done may come before)."""
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert name in lines[0], err


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Each recipe's quick run, and a tournament's folder, made once: the templates the cases copy."""
    runs = {}
    for recipe in _recipes():
        root = tmp_path_factory.mktemp(recipe.name)
        steps = recipe.quick(root, 1)
        for _, start, _ in steps:
            assert train.main([recipe.name, *start]) == 0, recipe.name
        runs[recipe.name] = (root, steps)
    from conquian_arena import tournament

    root = tmp_path_factory.mktemp("tournament")
    assert tournament.main([*TOURNAMENT, "--out", str(root / "t")]) == 0
    runs["tournament"] = (root, [(root / "t", None, None)])
    return runs


def _cases() -> list[str]:
    return [r.name for r in _recipes()] + ["tournament"]


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error:" in line]


@pytest.mark.parametrize("name", _cases())
def test_every_file_of_a_run_folder_as_a_link_a_folder_or_a_fifo_is_refused_in_one_line(name, made, tmp_path, capsys):
    """Each case in the very folder the run made (its config names its paths), restored after it."""
    from conquian_arena import tournament

    root, steps = made[name]
    victim = _victim(tmp_path)
    pristine = tmp_path / "pristine"
    shutil.copytree(root, pristine, symlinks=True)
    tried, wrong = 0, []
    for folder, _, again in steps:
        for rel in _files(folder):
            for kind in KINDS:
                _plant(folder / rel, kind, victim)
                capsys.readouterr()
                if name == "tournament":
                    code = tournament.main([*TOURNAMENT, "--out", str(folder)])
                else:
                    code = train.main([name, *again])
                err = capsys.readouterr().err
                errors = _error_lines(err)
                refused = code == 2 and len(errors) == 1 and rel.split("/")[-1] in errors[0] and "Traceback" not in err
                # TensorBoard's event files are written once, each session under a new name, never
                # reopened: a folder in the place of an old one is left alone (a link is refused above)
                left_alone = kind == "folder" and code == 0 and rel.split("/")[-1].startswith("events.out.tfevents")
                if not (refused or left_alone):
                    wrong.append((rel, kind, code, err.strip().splitlines()[-2:]))
                _victim_unchanged(victim)
                tried += 1
                shutil.rmtree(root)
                shutil.copytree(pristine, root, symlinks=True)
    assert not wrong, wrong
    assert tried >= 4 * 3  # a lock, a config and a log at least
    print(f"{name}: {tried} cases, every victim unchanged")


def test_a_new_run_into_a_folder_whose_lock_is_a_link_leaves_the_target_alone(tmp_path, capsys):
    # before: a rerun of distill generate --out opened run.lock through the link and emptied the user's file
    victim = _victim(tmp_path)
    recipe = recipes.find("distill")
    folder, start, _ = recipe.quick(tmp_path / "r", 1)[0]
    folder.mkdir(parents=True)
    (folder / "run.lock").symlink_to(victim)
    assert train.main(["distill", *start]) == 2
    _one_line(capsys.readouterr().err, "run.lock")
    _victim_unchanged(victim)


def test_a_tournament_whose_games_file_is_a_dangling_link_writes_nothing_elsewhere(tmp_path, capsys):
    from conquian_arena import tournament

    victim = _victim(tmp_path)
    out = tmp_path / "t"
    out.mkdir()
    (out / "games.jsonl").symlink_to(victim.with_name("not-there"))
    assert tournament.main([*TOURNAMENT, "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "games.jsonl")
    _victim_unchanged(victim)


# --------------------------------------------------------------------------- the library's opens, one by one


@pytest.mark.parametrize("kind", KINDS)
def test_each_open_of_the_library_refuses_what_is_not_a_regular_file(kind, tmp_path):
    victim = _victim(tmp_path)
    folder = tmp_path / "run"
    folder.mkdir()
    names = ["run.lock", "train.log", "fit.csv", "state.json", runfiles.KEY_FILE, "games.jsonl", "copy.npz"]
    for name in names:
        (folder / name).write_bytes(b"")
        _plant(folder / name, kind, victim)
    record = {"bytes": 0, "sha256": runfiles.digest(victim, 0)}
    source = tmp_path / "source.bin"
    source.write_bytes(b"model")
    attempts = {
        "run.lock": lambda: RunLock(folder).acquire(),
        "train.log": lambda: runfiles.append_line(folder / "train.log", "a line"),
        "fit.csv": lambda: runfiles.append_rows(folder / "fit.csv", [{"a": 1}]),
        "state.json": lambda: runfiles.write_json(folder / "state.json", {"a": 1}),
        runfiles.KEY_FILE: lambda: runfiles.read_key(folder),
        "games.jsonl": lambda: runfiles.open_append(folder / "games.jsonl").write("x"),
        "copy.npz": lambda: runfiles.copy_atomic(source, folder / "copy.npz"),
    }
    for name, attempt in attempts.items():
        with pytest.raises(RunFolderError, match=rf"{name} is (a symbolic link|a folder|a FIFO)"):
            attempt()
        _victim_unchanged(victim)
    with pytest.raises(RunFolderError, match="fit.csv is"):  # a table cut back to its checkpoint
        runfiles.cut_to(folder / "fit.csv", record)
    if kind != "folder":  # a folder is a folder's entry; it is refused where a file is opened (above)
        with pytest.raises(RunFolderError, match="is a"):
            runfiles.check_folder(folder)
    _victim_unchanged(victim)


def test_the_key_is_never_readable_by_others_and_partials_are_the_writers_own(tmp_path):
    seen = []
    real = os.replace

    def watch(src, dst):
        seen.append(os.stat(src).st_mode & 0o777)
        real(src, dst)

    os.replace = watch
    try:
        runfiles.write_key(tmp_path, runfiles.new_key())
    finally:
        os.replace = real
    assert seen == [0o600] and (tmp_path / runfiles.KEY_FILE).stat().st_mode & 0o777 == 0o600
    a, b = runfiles.partial_path(tmp_path / "games.jsonl"), runfiles.partial_path(tmp_path / "games.jsonl")
    assert a != b


# --------------------------------------------------------------------------- one writer per tournament folder


def test_a_second_tournament_on_a_folder_stops_in_one_line_naming_the_holder(tmp_path, capsys):
    from conquian_arena import tournament

    out = tmp_path / "t"
    lock = RunLock(out)
    lock.acquire()
    try:
        assert tournament.main([*TOURNAMENT, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        _one_line(err, f"pid {os.getpid()}")
        assert not (out / "games.jsonl").exists()
    finally:
        lock.release()
    assert tournament.main([*TOURNAMENT, "--out", str(out)]) == 0


def test_two_tournaments_started_together_on_one_folder_play_no_game_twice(tmp_path):
    out = tmp_path / "t"
    cmd = [sys.executable, "-m", "conquian_arena.tournament", "greedy", "random", "--games", "20", "--seed", "1",
           "-j", "1", "--no-plot", "--bootstrap", "20", "--out", str(out)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in "ab"]
    results = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 0], [0, 2]), results  # the second either waited its turn (all played) or stopped
    if codes == [0, 2]:
        err = next(e for p, (_, e) in zip(procs, results, strict=True) if p.returncode == 2)
        assert "in use by pid" in err and "Traceback" not in err
    indexes = [json.loads(line)["index"] for line in (out / "games.jsonl").read_text().splitlines()]
    assert len(indexes) == len(set(indexes)) == 20
    assert not (out / "games.rejected.txt").exists()


def test_a_held_lock_names_its_holder(tmp_path):
    lock = RunLock(tmp_path)
    lock.acquire()
    try:
        with pytest.raises(RunFolderInUseError, match=rf"in use by pid {os.getpid()} "):
            RunLock(tmp_path).acquire()
    finally:
        lock.release()


@pytest.mark.parametrize("text", ["[1, 2]", '"text"', "7", "null", "[" * 100_000])
def test_a_tournament_config_that_is_not_a_json_object_is_refused_in_one_line(text, tmp_path, capsys):
    # before: a traceback (AttributeError / RecursionError)
    from conquian_arena import tournament

    out = tmp_path / "t"
    out.mkdir()
    (out / "config.json").write_text(text)
    assert tournament.main([*TOURNAMENT, "--out", str(out)]) == 2
    _one_line(capsys.readouterr().err, "config.json")
    assert (out / "config.json").read_text() == text
