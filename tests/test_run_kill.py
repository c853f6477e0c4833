"""Run folders under kills, two processes, damaged and foreign files and a full disk (issue 25).

A kill is simulated at the N-th file event of a command (:mod:`conquian_arena.runfiles`: every write,
rename and append of a run folder is one); the run is resumed and every file of its folder is
compared with an uninterrupted run's (``tests/killfuzz.py``: models by their tensors, shards and
models by their arrays, CSV tables by their rows, wall-clock columns aside).  The default tests
take a few chosen kill points of each recipe; the ``slow`` ones every kill point, and a few with a
real ``os._exit`` in a child process (``CONQUIAN_KILL_AT``).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conquian_arena import runfiles as files
from tests import killfuzz as kf

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")
train = pytest.importorskip("train")

ROOT = Path(__file__).resolve().parent.parent


def ppo_args(out: Path) -> list[str]:
    return [
        "ppo", "--out", str(out), "--total-steps", "1024", "--bc-games", "20", "--bc-epochs", "1", "--n-envs", "2",
        "--n-steps", "256", "--batch-size", "128", "--n-epochs", "1", "--eval-every", "512", "--eval-games", "4",
        "--checkpoint-every", "512", "--snapshot-every", "256", "--workers", "1", "--no-progress", "--net-arch", "16",
    ]  # fmt: skip


def exit_args(out: Path, network: str = "scorer") -> list[str]:
    return [
        "exit", "--out", str(out), "--rounds", "2", "--games", "8", "--chunk", "4", "--playouts", "60",
        "--epochs", "2", "--eval-games", "8", "--seed", "3", "--network", network,
    ]  # fmt: skip


#: the shards distill's fit learns from (made once, by the reference fixture: every fit names the same folder)
DISTILL_LABELS: list[Path] = []


def distill_args(out: Path) -> list[str]:
    return [
        "distill", "fit", "--data", str(DISTILL_LABELS[0]), "--out", str(out), "--hidden", "8", "--epochs", "2",
        "--holdout", "3", "--batch", "64", "--eval-games", "4", "--seed", "3",
    ]  # fmt: skip


def selfplay_args(out: Path) -> list[str]:
    return [
        "selfplay", "--out", str(out), "--total-frames", "1200", "--num-games", "16", "--horizon", "16",
        "--hidden", "8", "--minibatch", "32", "--eval-every", "600", "--checkpoint-every", "600", "--snapshot-every",
        "300", "--eval-games", "4", "--workers", "1", "--torch-threads", "1", "--no-progress",
        "--seed", "1",  # a seed whose network improves at the second evaluation: best.npz is written twice
    ]  # fmt: skip


RECIPES = {
    "selfplay": (selfplay_args, lambda out: ["selfplay", "--resume", str(out), "--no-progress"]),
    "ppo": (ppo_args, lambda out: ["ppo", "--resume", str(out), "--no-progress", "--workers", "1"]),
    "exit": (exit_args, lambda out: ["exit", "--resume", str(out)]),
    "distill": (distill_args, distill_args),  # a step: the same command resumes
}


def _registry_recipes() -> list:
    from conquian_train import recipes

    return [r for r in recipes.every() if not isinstance(r, str)]


@pytest.mark.slow
@pytest.mark.parametrize("name", [r.name for r in _registry_recipes()])
def test_every_recipe_s_quick_run_killed_midway_resumes_into_the_uninterrupted_run(name, tmp_path):
    """Every recipe of the registry, by the quick run it declares (a new recipe needs no entry here):
    its last step killed at its middle file event and continued as a user would (its resume arguments)
    ends as the uninterrupted step did, file for file."""
    recipe = next(r for r in _registry_recipes() if r.name == name)

    def steps(root: Path) -> tuple[Path, list[str], list[str]]:
        *before, last = recipe.quick(root, 1)
        for _, start, _ in before:
            assert train.main([name, *start]) == 0
        return last

    root = tmp_path / "run"  # both runs in the same place: the paths they write are the same
    first, start, _ = steps(root)
    events = kf.file_events(lambda: train.main([name, *start]))
    ref = shutil.move(root, tmp_path / "reference") / first.relative_to(root)
    out, start, again = steps(root)
    k = max(1, len(events) // 2)

    def resume() -> int:  # as a user would: --resume a run that wrote its config, else the command again
        return train.main([name, *(again if (out / "config.json").exists() else start)])

    assert kf.killed_then_resumed(lambda: train.main([name, *start]), resume, k)
    diff = kf.differences(kf.folder_contents(ref), kf.folder_contents(out))
    assert not diff, f"{name} killed at event {k} ({events[k - 1]}): {diff[:8]}"


def resume_or_start(recipe: str, out: Path) -> int:
    """What a user does after a kill: ``--resume`` where the run wrote its config, else the command again."""
    start, resume = RECIPES[recipe]
    return train.main(resume(out) if (out / "config.json").exists() else start(out))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Each recipe's short run, uninterrupted, and its file events in order."""
    runs = {}
    DISTILL_LABELS[:] = [tmp_path_factory.mktemp("distill") / "labels"]
    assert train.main(["distill", "generate", "--out", str(DISTILL_LABELS[0]), "--games", "12", "--chunk", "6",
                       "--playouts", "2", "--seed", "5"]) == 0  # fmt: skip
    for recipe, (start, _) in RECIPES.items():
        out = tmp_path_factory.mktemp(recipe) / "ref"
        runs[recipe] = (out, kf.file_events(lambda out=out, start=start: train.main(start(out))))
    return runs


def kill_and_compare(recipe: str, reference, tmp_path: Path, k: int) -> Path:
    ref, events = reference[recipe]
    out = tmp_path / f"{recipe}_k{k}"
    start, _ = RECIPES[recipe]
    assert kf.killed_then_resumed(lambda: train.main(start(out)), lambda: resume_or_start(recipe, out), k)
    diff = kf.differences(kf.folder_contents(ref), kf.folder_contents(out))
    assert not diff, f"killed at event {k} ({events[k - 1]}): {diff[:8]}"
    return out


def event_index(events: list[str], text: str, nth: int = 0) -> int:
    """The 1-based number of the ``nth`` event naming ``text``."""
    return [i + 1 for i, e in enumerate(events) if text in e][nth]


# --------------------------------------------------------------------------- chosen kill points


@pytest.mark.parametrize(
    "recipe, text, nth",
    [
        ("ppo", "checkpoints.partial/latest.zip", 0),  # the first checkpoint's model written, its state not
        ("ppo", "appended", 3),  # a table's rows after the last checkpoint: not kept twice
        ("ppo", "renamed", 12),
        ("ppo", "checkpoints.old", 0),  # the old checkpoint moved away, the new one not yet in place
        ("exit", "labels/r00_0000.npz", 0),  # rounds.csv counts the shard the killed session made
        ("exit", "appended", 0),  # bc.csv: its rows come again after the resume
        ("exit", "checkpoints.partial/state.json", 0),  # round 0's fit written, its state not: no refit from it
        ("exit", "appended", 4),
        ("exit", "checkpoints.old", 1),
        ("distill", "fit.csv", 0),  # epoch 0's row, its checkpoint not yet made: the epoch again
        ("distill", "checkpoints.partial/state.json", 0),
        ("distill", "best.npz", 0),
        ("distill", "checkpoints.old", 0),
        ("distill", "scorer.npz", 0),  # the last file, half written: made again
        ("selfplay", "checkpoints.partial/latest.npz", 0),  # the first checkpoint's weights written, its state not
        ("selfplay", "appended", 2),  # eval.csv's rows after the last checkpoint: not kept twice
        ("selfplay", "checkpoints.old", 0),
        ("selfplay", "best.npz", 1),
        ("selfplay", "final.npz", 0),
    ],
)
def test_a_run_killed_at_a_file_event_resumes_into_the_uninterrupted_run(recipe, text, nth, reference, tmp_path):
    _, events = reference[recipe]
    kill_and_compare(recipe, reference, tmp_path, event_index(events, text, nth))


def test_every_write_of_a_run_is_a_file_event(reference):
    """Nothing in the folder is written behind the kill switch's back: each file of the finished run
    is named by an event (the log and the lock aside)."""
    for recipe, (ref, events) in reference.items():
        named = {Path(e.split(" ", 1)[1]).name for e in events}
        for path in ref.rglob("*"):
            if path.is_file() and path.name not in kf.SKIPPED and "tb" not in path.relative_to(ref).parts:
                assert path.name in named or path.parent.name == "checkpoints", (recipe, path)


def test_an_old_versions_checkpoint_without_its_state_starts_the_run_afresh(reference, tmp_path):
    """Before: killed after ``latest.zip`` but before ``state.json``, ``--resume`` died with
    FileNotFoundError and the command again was refused ("already holds a run")."""
    ref, _ = reference["ppo"]
    out = tmp_path / "old"
    shutil.copytree(ref, out)
    (out / "checkpoints" / "state.json").unlink()
    (out / "final.zip").unlink()
    assert train.main(RECIPES["ppo"][1](out)) == 0
    assert (out / "checkpoints.incomplete").is_dir()
    shutil.rmtree(out / "checkpoints.incomplete")
    assert not kf.differences(kf.folder_contents(ref), kf.folder_contents(out))
    assert "set aside as checkpoints.incomplete" in (out / "train.log").read_text()


def test_an_interrupted_swap_is_completed(tmp_path):
    final = tmp_path / "checkpoints"
    final.mkdir()
    (final / "a").write_text("old")
    staged = files.staging_dir(final)
    (staged / "a").write_text("new")
    files.kill_at(2)  # after final.ready is in place and final moved to final.old
    with pytest.raises(files.Killed):
        files.commit_dir(staged, final)
    files.kill_at(None)
    assert not final.exists() and (tmp_path / "checkpoints.ready").exists()
    assert "completed" in files.recover_dir(final)
    assert (final / "a").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["checkpoints"]


# --------------------------------------------------------------------------- one process per folder


def test_a_second_process_is_refused_naming_the_holder(reference, tmp_path, capsys):
    ref, _ = reference["exit"]
    out = tmp_path / "busy"
    shutil.copytree(ref, out)
    holder = files.RunLock(out)
    assert holder.acquire() is None
    try:
        assert train.main(["exit", "--resume", str(out), "--rounds", "3"]) == 2
        err = capsys.readouterr().err
        assert f"is in use by pid {os.getpid()} on " in err and " since " in err
        assert not (out / "labels" / "r02_0000.npz").exists()  # nothing done
    finally:
        holder.release()
    assert json.loads((out / "run.lock").read_text() or "{}") == {}


def test_a_dead_holders_lock_is_taken_over_and_said(reference, tmp_path):
    ref, _ = reference["exit"]
    out = tmp_path / "stale"
    shutil.copytree(ref, out)
    (out / "run.lock").write_text(json.dumps({"pid": 999999, "host": "elsewhere", "since": "2001-01-01 00:00:00"}))
    assert train.main(["exit", "--resume", str(out)]) == 0
    assert "took over the lock of pid 999999 on elsewhere" in (out / "train.log").read_text()


def test_the_lock_is_held_across_processes(tmp_path):
    out = tmp_path / "x"
    lock = files.RunLock(out)
    lock.acquire()
    try:
        code = f"from conquian_arena import runfiles; runfiles.RunLock({str(out)!r}).acquire()"
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
        assert child.returncode != 0 and f"in use by pid {os.getpid()}" in child.stderr
    finally:
        lock.release()


# --------------------------------------------------------------------------- bad folder contents


def test_a_cut_shard_is_set_aside_and_labelled_again(reference, tmp_path):
    """Before: BadZipFile naming no file, and the run stuck until the shard was deleted by hand."""
    ref, _ = reference["exit"]
    out = tmp_path / "cut"
    shutil.copytree(ref, out)
    shard = out / "labels" / "r01_0001.npz"
    shard.write_bytes(shard.read_bytes()[:500])
    state = json.loads((out / "checkpoints" / "state.json").read_text())
    assert train.main(["exit", "--resume", str(out)]) == 0
    assert (out / "labels" / "r01_0001.npz.bad").is_file()
    assert "r01_0001.npz is unreadable" in (out / "train.log").read_text()
    (out / "labels" / "r01_0001.npz.bad").unlink()
    assert json.loads((out / "checkpoints" / "state.json").read_text())["round"] == state["round"]
    assert not kf.differences(kf.folder_contents(ref)["labels/r01_0001.npz"], kf.read_file(shard))


def test_a_shard_of_another_run_is_refused_with_its_settings(reference, tmp_path, capsys):
    """Before: a shard of another seed and playout count was taken silently."""
    ref, _ = reference["exit"]
    other = tmp_path / "other"
    args = [*exit_args(other), "--no-eval-start"]  # kill_at(4) counts the writes: the first shard's, not step 0's
    args[args.index("--seed") + 1], args[args.index("--playouts") + 1], args[args.index("--rounds") + 1] = (
        "4",
        "30",
        "1",
    )
    files.kill_at(4)  # the config written and renamed, the first shard written and renamed: killed
    with pytest.raises(files.Killed):
        train.main(args)
    files.kill_at(None)
    out = tmp_path / "mine"
    files.kill_at(4)  # this run killed after its first shard too
    with pytest.raises(files.Killed):
        train.main([*exit_args(out), "--no-eval-start"])
    files.kill_at(None)
    shutil.copy(other / "labels" / "r00_0000.npz", out / "labels" / "r00_0001.npz")
    assert train.main(["exit", "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "r00_0001.npz holds round 0 shard 0" in err
    shutil.copy(other / "labels" / "r00_0000.npz", out / "labels" / "r00_0000.npz")
    (out / "labels" / "r00_0001.npz").unlink()
    assert train.main(["exit", "--resume", str(out)]) == 2
    err = capsys.readouterr().err
    assert "r00_0000.npz was made with other settings" in err and "playouts 30 (this run 60)" in err
    assert "seed 4 (this run 3)" in err and "belongs to another run" in err


@pytest.mark.parametrize("recipe, key, value", [("exit", "chunk", 2), ("ppo", "n_steps", 128)])
def test_an_edited_config_is_refused(recipe, key, value, reference, tmp_path, capsys):
    """Before: a config.json with an edited ``chunk`` was taken silently."""
    ref, _ = reference[recipe]
    out = tmp_path / "edited"
    shutil.copytree(ref, out)
    config = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**config, key: value}))
    assert train.main(RECIPES[recipe][1](out)) == 2
    assert "differs from the recipe the run's checkpoint was made with" in capsys.readouterr().err


@pytest.mark.parametrize(
    "recipe, key, value, message",
    [
        ("exit", "round", "x", "round is 'x', expected a count"),
        ("exit", "pending_eval", -1, "pending_eval is -1, expected a count or null"),
        ("exit", "next_eval", 0, "unknown keys ['next_eval']"),  # the PPO recipe's counter is not expert iteration's
        ("ppo", "next_eval", 1.5, "next_eval is 1.5, expected a count"),
        ("ppo", "snapshot_steps", ["a"], "snapshot_steps is ['a'], expected a list of counts"),
        ("ppo", "files", {"eval.csv": 3}, "files is {'eval.csv': 3}, expected files"),
        ("ppo", "surprise", 1, "unknown keys ['surprise']"),
    ],
)
def test_a_wrongly_typed_state_is_named(recipe, key, value, message, reference, tmp_path, capsys):
    """Before: a traceback (a TypeError deep in the loop)."""
    ref, _ = reference[recipe]
    out = tmp_path / "typed"
    shutil.copytree(ref, out)
    path = out / "checkpoints" / "state.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), key: value}))
    assert train.main(RECIPES[recipe][1](out)) == 2
    err = capsys.readouterr().err
    assert message in err and "state.json" in err and "Traceback" not in err


def test_an_edited_table_is_refused(reference, tmp_path, capsys):
    ref, _ = reference["ppo"]
    out = tmp_path / "table"
    shutil.copytree(ref, out)
    data = (out / "eval.csv").read_bytes()
    (out / "eval.csv").write_bytes(data.replace(b",random,", b",r4ndom,", 1))
    assert train.main(RECIPES["ppo"][1](out)) == 2
    assert "eval.csv: its first" in capsys.readouterr().err


@pytest.mark.parametrize("recipe, victim", [("exit", "r01_0000"), ("ppo", "latest"), ("distill", "latest")])
def test_a_full_disk_says_the_run_is_intact_in_one_line(recipe, victim, reference, tmp_path, monkeypatch, capsys):
    """Before: an OSError traceback.  Then freed space and a resume give the uninterrupted run."""
    real = files.fsync_path

    def full(path):
        if victim in path.name:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path)

    ref, _ = reference[recipe]
    out = tmp_path / "full"
    monkeypatch.setattr(files, "fsync_path", full)
    assert train.main(RECIPES[recipe][0](out)) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: the disk is full writing ") and "is intact up to its last checkpoint" in err
    again = " ".join(RECIPES[recipe][1](out)) if recipe == "distill" else f"--resume {out}"  # a step: itself again
    assert err.endswith(again) and not list(out.rglob("*.partial*"))
    monkeypatch.setattr(files, "fsync_path", real)
    assert train.main(RECIPES[recipe][1](out)) == 0
    assert not kf.differences(kf.folder_contents(ref), kf.folder_contents(out))


# --------------------------------------------------------------------------- the fuzz


@pytest.mark.slow
@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_kill_point_resumes_into_the_uninterrupted_run(recipe, reference, tmp_path):
    _, events = reference[recipe]
    for k in range(1, len(events) + 1):
        out = kill_and_compare(recipe, reference, tmp_path, k)
        shutil.rmtree(out)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_resume_killed_again_still_ends_as_the_uninterrupted_run(recipe, reference, tmp_path):
    ref, events = reference[recipe]
    rng = np.random.default_rng(7)
    start, resume = RECIPES[recipe]
    for trial in range(6):
        out = tmp_path / f"twice{trial}"
        first, second = (int(x) for x in rng.integers(1, len(events), size=2))
        files.kill_at(first)
        with pytest.raises(files.Killed):
            train.main(start(out))
        files.kill_at(second)
        try:
            resume_or_start(recipe, out)
        except files.Killed:
            pass
        files.kill_at(None)
        assert resume_or_start(recipe, out) == 0
        assert not kf.differences(kf.folder_contents(ref), kf.folder_contents(out)), (first, second)


@pytest.mark.slow
@pytest.mark.parametrize("recipe, at", [("ppo", 9), ("ppo", 25), ("exit", 11), ("exit", 24), ("exit", 44)])
def test_a_real_kill_in_a_child_process(recipe, at, reference, tmp_path):
    """``CONQUIAN_KILL_AT=N``: the child ends with ``os._exit`` at its N-th file event, as under
    ``kill -9`` (no ``finally``, no flush, the lock left naming it); the resume takes over."""
    ref, _ = reference[recipe]
    out = tmp_path / "child"
    env = {**os.environ, "PYTHONPATH": str(ROOT), files.KILL_ENV: str(at)}
    child = subprocess.run([sys.executable, "train.py", *RECIPES[recipe][0](out)], cwd=ROOT, env=env,
                           capture_output=True, text=True)  # fmt: skip
    assert child.returncode == files.KILL_EXIT, child.stderr[-2000:]
    assert resume_or_start(recipe, out) == 0
    assert "took over the lock of pid" in (out / "train.log").read_text()
    assert not kf.differences(kf.folder_contents(ref), kf.folder_contents(out))
