"""The shard folders of the generate|fit recipes (conquian_train.shards): one writer per folder,
each shard the one it says it is, every config read strictly, every bad file named; each test here
failed before its fix.  A shard and config fuzz runs a sample by default, more with ``-m slow``."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conquian_train.recipes import belief as recipe
from conquian_train.shards import ShardError

ROOT = Path(__file__).resolve().parent.parent


def _config(out, **kw):
    return recipe.GenerateConfig(**({"out": str(out), "games": 6, "chunk": 2, "kinds": ("random",), "seed": 3} | kw))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    out = tmp_path_factory.mktemp("shards") / "run"
    recipe.generate(_config(out), log=lambda *a: None)
    return out


@pytest.fixture
def folder(pristine, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(pristine, out)
    return out


def _arrays(path):
    with np.load(path, allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def _same(a, b):
    x, y = _arrays(a), _arrays(b)
    return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)


# ------------------------------------------------------------------ one writer per folder


def test_a_second_generate_on_a_folder_stops_with_one_line_naming_the_first(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "conquian_train.recipes.belief", "generate", "--out", str(out), "--kinds", "random",
           "--games", "40", "--chunk", "4", "--seed", "1"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = out / "run.lock"
        deadline = time.time() + 120
        while not (lock.exists() and f'"pid": {first.pid}' in lock.read_text()):
            assert first.poll() is None and time.time() < deadline, first.communicate()
            time.sleep(0.05)
        first.send_signal(signal.SIGSTOP)  # the holder frozen with its lock: no race with the second
        try:
            second = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        finally:
            first.send_signal(signal.SIGCONT)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and f"in use by pid {first.pid}" in lines[0], lines
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
    finally:
        if first.poll() is None:
            first.kill()
    # every shard there, whole, the same as one writer alone makes; no temporary file left
    alone = tmp_path / "alone"
    recipe.generate(recipe.GenerateConfig(out=str(alone), games=40, chunk=4, kinds=("random",), seed=1),
                    log=lambda *a: None)  # fmt: skip
    names = sorted(p.name for p in (out / "shards").iterdir())
    assert names == [f"s{k:05d}.npz" for k in range(10)]
    assert all(_same(out / "shards" / n, alone / "shards" / n) for n in names)
    assert len(recipe.load_positions([str(out)])["game"]) == len(recipe.load_positions([str(alone)])["game"])


def test_temporary_names_are_each_writers_own(tmp_path):
    from conquian_arena.runfiles import partial_path

    a, b = partial_path(tmp_path / "s00001.npz"), partial_path(tmp_path / "s00001.npz")
    assert a != b and a.name.startswith(f"s00001.partial.{os.getpid()}-") and a.suffix == ".npz"


# ------------------------------------------------------------------ each shard the one it says it is


def test_a_shard_the_system_cannot_read_for_now_is_named_and_left_in_place(folder, monkeypatch):
    # before: any OSError (an I/O error, too many open files) set the shard aside as .bad
    import errno

    from conquian_train import shards

    shard = folder / "shards" / "s00001.npz"
    before = shard.read_bytes()
    real = np.load

    def flaky(path, *args, **kwargs):
        if str(path).endswith("s00001.npz"):
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(shards.np, "load", flaky)
    with pytest.raises(ShardError, match=r"s00001.npz'?: cannot be read \(Input/output error\); left in place"):
        recipe.load_positions([str(folder)])
    assert shard.read_bytes() == before and not (folder / "shards" / "s00001.npz.bad").exists()
    monkeypatch.undo()
    recipe.load_positions([str(folder)])


def test_a_truncated_shard_is_named_set_aside_and_made_again(folder, pristine):
    shard = folder / "shards" / "s00001.npz"
    shard.write_bytes(shard.read_bytes()[:300])
    with pytest.raises(ShardError, match=r"s00001.npz'?: not a readable .npz .*set aside as s00001.npz.bad"):
        recipe.load_positions([str(folder)])
    assert not shard.exists() and (folder / "shards" / "s00001.npz.bad").exists()
    recipe.generate(_config(folder), log=lambda *a: None)
    assert _same(shard, pristine / "shards" / "s00001.npz")
    recipe.load_positions([str(folder)])


def test_swapped_and_foreign_shards_are_refused_by_name(folder, tmp_path):
    s0, s1 = folder / "shards" / "s00000.npz", folder / "shards" / "s00001.npz"
    tmp = folder / "shards" / "x"
    s0.rename(tmp), s1.rename(s0), tmp.rename(s1)
    with pytest.raises(ShardError, match=r"s00000.npz' says it is shard 1, its name says 0"):
        recipe.load_positions([str(folder)])
    tmp.unlink(missing_ok=True)
    s0.rename(tmp), s1.rename(s0), tmp.rename(s1)
    other = tmp_path / "other"
    recipe.generate(_config(other, seed=4), log=lambda *a: None)
    shutil.copy(other / "shards" / "s00002.npz", folder / "shards" / "s00002.npz")
    with pytest.raises(ShardError, match=r"s00002.npz' was made with other knobs .* \(seed\)"):
        recipe.load_positions([str(folder)])


def test_an_edited_config_is_refused_not_obeyed(folder):
    path = folder / "config.json"
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({**saved, "games": 4}))  # silently dropped a shard before
    with pytest.raises(ShardError, match=r"shards \['s00002.npz'\] that its config.json does not make"):
        recipe.load_positions([str(folder)])
    path.write_text(json.dumps({**saved, "kinds": ["greedy"]}))
    with pytest.raises(ShardError, match=r"other knobs than its folder's config.json \(kinds\)"):
        recipe.load_positions([str(folder)])
    for data, message in (
        ({**saved, "chunk": 0}, "chunk must be"),  # a ZeroDivisionError before
        ({**saved, "games": 10**12}, "more than the 100000 a folder may hold"),  # ran past 600 s before
        ({**saved, "games": 10**9, "chunk": 1}, "more than the 100000 a folder may hold"),
        ([1], "a JSON object of knobs, got list"),
    ):
        path.write_text(json.dumps(data))
        started = time.process_time()
        with pytest.raises(ValueError, match=message) as err:
            recipe.load_positions([str(folder)])
        assert str(path) in str(err.value) and time.process_time() - started < 1
    with pytest.raises(ValueError, match="a JSON object of knobs, got list"):  # an AttributeError before
        recipe.generate(_config(folder), log=lambda *a: None)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a["kind"].__setitem__(0, 1), "a bot index outside its 1 kinds"),  # an IndexError before
        (lambda a: a["observer"].__setitem__(0, -1), "a bot index outside its 1 kinds"),  # named another bot
        (lambda a: a["truth"].__setitem__(0, a["truth"][0] ^ 1 << 45), "an opponent's hand outside"),
        (lambda a: a["n_opp"].__setitem__(0, a["n_opp"][0] + 1), "another size than n_opp"),
        (lambda a: a["rows"].__setitem__((0, 14), 7), "a player to move other than 0 or 1"),
        (lambda a: a.update(meta=np.array("{oops")), "its meta is not JSON"),
    ],
)
def test_a_belief_shard_holding_the_impossible_is_named(folder, change, message):
    shard = folder / "shards" / "s00000.npz"
    arrays = _arrays(shard)
    change(arrays)
    np.savez_compressed(shard, **arrays)
    with pytest.raises(ShardError, match=message) as err:
        recipe.load_positions([str(folder)])
    assert str(shard) in str(err.value)


# ------------------------------------------------------------------ the shard fuzz


def _mutate(rng, folder: Path, other: Path) -> str:
    paths = sorted((folder / "shards").glob("s*.npz"))
    k = int(rng.integers(len(paths)))
    shard = paths[k]
    kind = int(rng.integers(6))
    if kind == 0:
        shard.write_bytes(shard.read_bytes()[: int(rng.integers(0, shard.stat().st_size))])
        return "truncated"
    if kind == 1:
        body = bytearray(shard.read_bytes())
        for _ in range(int(rng.integers(1, 6))):
            body[int(rng.integers(len(body)))] ^= 1 << int(rng.integers(8))
        shard.write_bytes(bytes(body))
        return "byte flips"
    if kind == 2:
        j = (k + 1) % len(paths)
        a, b = shard.read_bytes(), paths[j].read_bytes()
        shard.write_bytes(b), paths[j].write_bytes(a)
        return "swapped"
    if kind == 3:
        shutil.copy(other / "shards" / shard.name, shard)
        return "foreign"
    if kind == 4:
        arrays = _arrays(shard)
        meta = json.loads(str(arrays["meta"]))
        meta[str(rng.choice(["shard", "seed", "kinds", "settings"]))] = [None, -1, "x", {}][int(rng.integers(4))]
        arrays["meta"] = np.array(json.dumps(meta))
        np.savez_compressed(shard, **arrays)
        return "meta edited"
    config = folder / "config.json"
    saved = json.loads(config.read_text())
    key = str(rng.choice(["games", "chunk", "seed", "kinds"]))
    saved[key] = [0, 1, 10**12, -3, "x", [1], None][int(rng.integers(7))]
    config.write_text(json.dumps(saved))
    return f"config {key} edited"


def _fuzz(pristine: Path, tmp_path: Path, cases: int, seed: int) -> dict[str, int]:
    other = tmp_path / "other"
    recipe.generate(_config(other, seed=9), log=lambda *a: None)
    whole = recipe.load_positions([str(pristine)])
    tally = {"refused": 0, "same": 0}
    for case in range(cases):
        rng = np.random.default_rng([seed, case])
        folder = tmp_path / f"case{case}"
        shutil.copytree(pristine, folder)
        label = _mutate(rng, folder, other)
        try:
            got = recipe.load_positions([str(folder)])
        except ValueError as err:
            assert str(folder) in str(err), (case, label, err)
            tally["refused"] += 1
        except Exception as err:  # noqa: BLE001 - any other error is the defect this fuzz looks for
            pytest.fail(f"case {case} (seed {seed}, {label}): {type(err).__name__}: {err}")
        else:  # a flip the archive does not read (a directory field): the same positions
            assert all(np.array_equal(got[n], whole[n]) for n in whole), (case, label)
            tally["same"] += 1
        # no shard lost: the untouched ones as they were, an unreadable one set aside, not deleted
        for path in (pristine / "shards").glob("s*.npz"):
            mine = folder / "shards" / path.name
            assert mine.exists() or (folder / "shards" / f"{path.name}.bad").exists(), (case, label, path.name)
        shutil.rmtree(folder)
    return tally


def test_shard_and_config_fuzz_fast(pristine, tmp_path):
    tally = _fuzz(pristine, tmp_path, 24, seed=1)
    assert tally["refused"] >= 15, tally


@pytest.mark.slow
def test_shard_and_config_fuzz(pristine, tmp_path):
    tally = _fuzz(pristine, tmp_path, 400, seed=2)
    assert tally["refused"] >= 300, tally


# ------------------------------------------------------------------ the distilled scorer's fit


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    pytest.importorskip("numba")
    pytest.importorskip("torch")
    from conquian_train.recipes import distill

    out = tmp_path_factory.mktemp("distill") / "labels"
    distill.generate(distill.GenerateConfig(out=str(out), games=12, chunk=6, playouts=2, seed=5), log=lambda _: None)
    return out


def test_a_label_out_of_range_is_refused_when_read(labels, tmp_path):
    from conquian_train.recipes import distill

    copy = tmp_path / "labels"
    shutil.copytree(labels, copy)
    shard = copy / "shards" / "s00001.npz"
    arrays = _arrays(shard)
    arrays["q"][0, 0] = 3e38  # turned the weights into NaN, named only at the end of the fit before
    np.savez_compressed(shard, **arrays)
    with pytest.raises(ShardError, match=r"s00001.npz'?: a value that is not finite or not within \[0, 1\]"):
        distill.load_labels([str(copy)])


def _fit_config(labels, out, **kw):
    from conquian_train.recipes import distill

    return distill.FitConfig(**({"data": (str(labels),), "out": str(out), "hidden": (8,), "epochs": 2, "holdout": 3,
                                 "batch": 64, "eval_games": 2} | kw))  # fmt: skip


def test_a_fit_killed_after_a_checkpoint_resumes_whole_and_its_folder_is_read_strictly(labels, tmp_path):
    """A kill after epoch 0's checkpoint: the resume plays no evaluation twice and ends with the
    whole fit's tables (every kill point: tests/test_run_kill.py); the claimed config is read strictly."""
    from conquian_arena import runfiles as files
    from conquian_train.recipes import distill
    from tests import killfuzz as kf

    whole_log: list[str] = []
    files.kill_at(None)
    distill.fit(_fit_config(labels, tmp_path / "whole"), log=whole_log.append)
    events = files.events()
    first_checkpoint = next(i for i, e in enumerate(events) if e.startswith("renamed") and e.endswith("/checkpoints"))
    files.kill_at(first_checkpoint + 2)  # epoch 0's checkpoint in place, then epoch 1's row appended
    with pytest.raises(files.Killed):
        distill.fit(_fit_config(labels, tmp_path / "cut"), log=lambda _: None)
    files.kill_at(None)
    cut = tmp_path / "cut"
    assert len((cut / "fit.csv").read_text().splitlines()) == 3  # a row the last checkpoint does not hold
    log: list[str] = []
    distill.fit(_fit_config(labels, cut), log=log.append)
    assert "cut " in " ".join(log) and "resumed after epoch 0" in log, log
    assert not any(line.startswith("eval @ 0:") for line in log), log
    assert sum(line.startswith("eval @ 0:") for line in whole_log) == 1  # the untrained network, played once
    assert not kf.differences(kf.folder_contents(tmp_path / "whole"), kf.folder_contents(cut))
    assert (cut / "learning_curve.png").stat().st_size > 0 and (cut / "scorer.npz").exists()
    # the fit folder is claimed under its lock and read strictly
    (cut / "config.json").write_text("[1]")
    with pytest.raises(ValueError, match="a JSON object of knobs, got list"):
        distill.fit(_fit_config(labels, cut), log=lambda _: None)


def test_a_fit_folder_with_knobs_this_fit_does_not_know_is_refused_with_one_line(labels, tmp_path, capsys):
    from conquian_train.cli import main as cli

    old = tmp_path / "old"
    old.mkdir()
    (old / "config.json").write_text(json.dumps({"out": str(old), "eval_deals": 2}))
    assert cli(["distill", "fit", "--data", str(labels), "--out", str(old), "--hidden", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown config keys ['eval_deals']" in err[0] and "another --out" in err[0], err


def test_a_generate_folder_of_the_older_distill_is_resumed(labels, tmp_path):
    """A folder made before the rules knob (its config.json and shards name no rules) is the standard game's."""
    from conquian_train.recipes import distill

    old = tmp_path / "labels"
    shutil.copytree(labels, old)
    config = json.loads((old / "config.json").read_text())
    config.pop("rules")
    (old / "config.json").write_text(json.dumps(config))
    for path in (old / "shards").glob("s*.npz"):
        arrays = _arrays(path)
        meta = json.loads(str(arrays["meta"]))
        meta["settings"].pop("rules")
        arrays["meta"] = np.array(json.dumps(meta))
        np.savez_compressed(path, **arrays)
    (old / "shards" / "s00001.npz").unlink()
    distill.generate(distill.GenerateConfig(out=str(old), games=12, chunk=6, playouts=2, seed=5), log=lambda _: None)
    assert _same(old / "shards" / "s00001.npz", labels / "shards" / "s00001.npz")
    mine, theirs = distill.load_labels([str(old)]), distill.load_labels([str(labels)])
    assert all(np.array_equal(mine[k], theirs[k]) for k in mine)


def test_a_second_fit_on_a_fit_folder_stops_with_one_line(labels, tmp_path, capsys):
    from conquian_arena import runfiles as files
    from conquian_train.cli import main as cli
    from conquian_train.recipes import distill

    out = tmp_path / "fit"
    with files.hold_folder(out):  # a fit in progress: its lock held
        with pytest.raises(files.RunFolderInUseError, match=f"in use by pid {os.getpid()} "):
            distill.fit(_fit_config(labels, out, epochs=1), log=lambda _: None)
        assert cli(["distill", "fit", "--data", str(labels), "--out", str(out), "--hidden", "8"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and f"in use by pid {os.getpid()}" in err[0], err
    assert not (out / "checkpoints").exists() and not (out / "config.json").exists()


def test_a_long_generation_says_how_long_is_left_as_it_goes():
    """``make train``'s labelling logs its pace after each shard: the time so far and the time left."""
    import time

    from conquian_train.shards import progress

    t0 = time.perf_counter() - 300  # one shard of four made in 5 minutes
    assert progress(1, 4, t0).endswith("1 of 4 done, about 15 min left at this pace")
    assert progress(3, 4, time.perf_counter() - 30).endswith("3 of 4 done, about 10 s left at this pace")
    assert progress(4, 4, t0).endswith("4 of 4 done")
