"""Expert iteration (``train.py exit``, :mod:`conquian_train.recipes.exit`): label, learn, save, load, play, resume."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest

from agents import make_agent
from agents.networks.ppo import load_policy
from agents.scorer.scorer import load_scorer
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.game import MELD, new_game
from conquian_env.layout import MELD_FEATURES
from conquian_env.view import PlayerView
from conquian_train.imitation import ImitationData

pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")
train = pytest.importorskip("train")
from conquian_train.recipes import exit as exit_mod  # noqa: E402


def _args(out, rounds=2, network="scorer"):
    return [
        "exit", "--out", str(out), "--rounds", str(rounds), "--games", "8", "--chunk", "4", "--playouts", "60",
        "--epochs", "2", "--eval-games", "8", "--seed", "3", "--network", network,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def exit_run(tmp_path_factory):
    """A short run of the default network, the action scorer."""
    out = tmp_path_factory.mktemp("exit") / "run"
    assert train.main(_args(out)) == 0
    return out


@pytest.fixture(scope="module")
def exit_run_ppo(tmp_path_factory):
    """The same run with the MaskablePPO network."""
    out = tmp_path_factory.mktemp("exit_ppo") / "run"
    assert train.main(_args(out, network="ppo")) == 0
    return out


def _weights(path):
    if path.suffix == ".npz":
        return [(w, b, "relu") for w, b in load_scorer(path).layers]
    return load_policy(path).layers


@pytest.mark.parametrize("network", ["scorer", "ppo"])
def test_a_short_run_labels_learns_and_saves(network, request):
    exit_run = request.getfixturevalue("exit_run" if network == "scorer" else "exit_run_ppo")
    suffix = ".npz" if network == "scorer" else ".zip"
    shards = sorted((exit_run / "labels").glob("*.npz"))
    assert [p.name for p in shards] == ["r00_0000.npz", "r00_0001.npz", "r01_0000.npz", "r01_0001.npz"]
    for p in shards:
        data, meta = ImitationData.load(p, "meld")
        assert meta["playouts"] == 60 and len(data) > 0
        searched = ~np.isnan(data.q.astype(np.float32)).all(axis=1)
        assert searched.any() and (~searched).any()  # search labels and greedy's meld labels
        # a value for every legal action and none elsewhere; the label is a legal action
        q = data.q[searched].astype(np.float32)
        assert np.array_equal(~np.isnan(q), data.masks[searched])
        assert ((q >= 0) & (q <= 1) | np.isnan(q)).all()
        assert data.masks[np.arange(len(data)), data.actions].all()
        assert (data.masks.sum(axis=1) > 1).all()  # only decisions with a choice
    for name in ("config.json", "train.log", "eval.csv", "bc.csv", "rounds.csv", f"round0{suffix}",
                 f"round1{suffix}", f"best{suffix}", f"final{suffix}", "learning_curve.png"):  # fmt: skip
        assert (exit_run / name).is_file(), name
    rows = list(csv.DictReader(open(exit_run / "eval.csv")))
    assert [(r["stage"], r["opponent"]) for r in rows] == [
        ("start", "random"), ("start", "greedy"),  # step 0: the network the run starts from, untrained
        ("round0", "random"), ("round0", "greedy"), ("round1", "random"), ("round1", "greedy")
    ]  # fmt: skip
    labels = [len(ImitationData.load(p, "meld")[0]) for p in shards]
    assert [int(r["step"]) for r in rows[::2]] == [0, sum(labels[:2]), sum(labels)]
    times = list(csv.DictReader(open(exit_run / "rounds.csv")))
    assert [int(r["round"]) for r in times] == [0, 1]
    assert all(int(r["searched"]) > 0 and float(r["label_s"]) >= 0 and float(r["fit_s"]) >= 0 for r in times)
    if network == "scorer":  # the curve's second panel: the kept fit's held-out regret by round, and greedy's
        regret = list(csv.DictReader(open(exit_run / "regret.csv")))
        assert [int(r["labels"]) for r in regret] == [sum(labels[:2]), sum(labels)]
        bc = list(csv.DictReader(open(exit_run / "bc.csv")))
        for r in regret:
            stage = [b for b in bc if b["stage"] == f"round{r['round']}"]
            assert float(r["greedy_held_out_regret"]) == float(stage[0]["greedy_held_out_regret"])
            assert float(r["held_out_regret"]) <= min(float(b["held_out_regret"]) for b in stage) + 1e-5
    else:
        assert not (exit_run / "regret.csv").exists()


@pytest.mark.parametrize("spec", ["scorer:{run}/best.npz", "ppo:{ppo}/best.zip"])
def test_the_network_plays_legal_moves_through_its_spec(spec, exit_run, exit_run_ppo):
    bot = make_agent(spec.format(run=exit_run, ppo=exit_run_ppo), seed=1)
    for g in range(6):
        hands, stock = deal_for_seed(700 + g)
        record = play_game([bot, make_agent("greedy")][:: 1 if g % 2 else -1], hands=hands, stock=stock, seed=g)
        assert record.failure is None  # an illegal move would be a failure of the game loop


def test_the_recorder_keeps_decisions_with_a_choice_and_greedy_melds():
    recorder = exit_mod.ViewRecorder(make_agent("greedy"), "meld")
    hands, stock = deal_for_seed(11)
    play_game([recorder, make_agent("random", seed=2)], hands=hands, stock=stock, seed=1)
    assert recorder.rows
    for obs, mask, view, meld_label in recorder.rows:
        assert obs.shape == (MELD_FEATURES.size,)
        assert mask.sum() > 1 and mask[view.legal_actions()].all()
        assert (meld_label >= 0) == (view.phase == MELD)
        assert meld_label < 0 or mask[meld_label]
    # the snapshots are frozen: each still shows its own decision, not the end of the game
    assert len({view.move_count for *_, view, _ in recorder.rows}) == len(recorder.rows)


def test_a_snapshot_is_not_changed_by_later_moves():
    state = new_game(seed=4)
    view = PlayerView(state, state.player)
    frozen, before = view.snapshot(), view.legal_action_mask()
    state.apply(state.legal_actions()[0])
    assert frozen.legal_action_mask() == before and frozen.move_count == 0 and view.move_count == 1


@pytest.mark.parametrize("network", ["scorer", "ppo"])
def test_a_killed_run_resumes_into_the_same_run(network, request, tmp_path):
    # one round, then a shard of the second round lost with the kill: resuming with two rounds
    # makes the missing shards and gives the very shards and network of the uninterrupted run
    exit_run = request.getfixturevalue("exit_run" if network == "scorer" else "exit_run_ppo")
    suffix = ".npz" if network == "scorer" else ".zip"
    out = tmp_path / "run"
    assert train.main(_args(out, rounds=1, network=network)) == 0
    assert train.main(["exit", "--resume", str(out), "--rounds", "2"]) == 0
    (out / "labels" / "r01_0001.npz").unlink()
    state = json.loads((out / "checkpoints" / "state.json").read_text())
    state.update(round=1, pending_eval=None)
    (out / "checkpoints" / "state.json").write_text(json.dumps(state))
    (out / "checkpoints" / f"latest{suffix}").write_bytes((out / f"round0{suffix}").read_bytes())
    assert train.main(["exit", "--resume", str(out)]) == 0
    assert "resumed" in (out / "train.log").read_text()
    for name in ("r00_0000.npz", "r01_0000.npz", "r01_0001.npz"):
        a, b = (ImitationData.load(d / "labels" / name, "meld")[0] for d in (exit_run, out))
        for column in ("obs", "masks", "actions", "returns", "q", "game"):
            assert np.array_equal(getattr(a, column), getattr(b, column), equal_nan=True), (name, column)
    mine, theirs = (_weights(d / f"round1{suffix}") for d in (out, exit_run))
    for (w1, b1, a1), (w2, b2, a2) in zip(mine, theirs, strict=True):
        assert np.allclose(w1, w2, atol=1e-6) and np.allclose(b1, b2, atol=1e-6) and a1 == a2


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--playouts", "0"], "playouts must be a positive integer"),
        (["--features", "pixels"], "features must be 'meld' or 'raw'"),
        (["--opponents", "nosuchbot"], "nosuchbot"),
        (["--best-by", "pimc"], "best_by 'pimc' must be one of eval_opponents"),
        (["--init", "no-such-model.npz"], "neither '', 'scorer'"),
        (["--network", "ppo", "--init", "scorer"], "neither '', 'ppo'"),
        (["--network", "transformer"], "network must be 'scorer' or 'ppo'"),
        (["--features", "raw"], "the scorer reads the 'meld' features"),
        (["--net-arch", "0"], "net_arch must be positive layer sizes"),
    ],
)
def test_bad_knobs_are_named(tmp_path, capsys, extra, message):
    assert train.main(["exit", "--out", str(tmp_path / "r"), *extra]) == 2
    assert message in capsys.readouterr().err


def test_resume_refuses_a_folder_without_a_run_and_a_changed_recipe(exit_run, tmp_path, capsys):
    assert train.main(["exit", "--resume", str(tmp_path / "nothing")]) == 2
    assert "no config.json" in capsys.readouterr().err
    assert train.main(["exit", "--resume", str(exit_run), "--playouts", "9"]) == 2
    assert "only --rounds" in capsys.readouterr().err
    assert train.main(_args(exit_run)) == 2
    assert "already holds a run" in capsys.readouterr().err


def test_the_baseline_script_trains_from_scratch_and_writes_its_csv(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import baselines

    out, csv_path, png = tmp_path / "runs", tmp_path / "curves.csv", tmp_path / "curves.png"
    args = ["--steps", "1024", "--seeds", "1", "--eval-every", "512", "--eval-games", "8", "--out", str(out),
            "--csv", str(csv_path), "--png", str(png),
            "--train-args", "--n-envs 2 --n-steps 256 --batch-size 128 --n-epochs 1 --workers 1"]  # fmt: skip
    assert baselines.main(args) == 0
    rows = list(csv.DictReader(open(csv_path)))
    assert {(r["variant"], r["seed"]) for r in rows} == {("raw", "1"), ("meld", "1")}
    assert sorted({int(r["step"]) for r in rows}) == [0, 512, 1024]
    assert {r["opponent"] for r in rows} == {"random", "greedy"} and png.is_file()
    assert all(int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == int(r["games"]) for r in rows)
    config = json.loads((out / "raw_s1" / "config.json").read_text())
    assert config["features"] == "raw" and config["bc_games"] == 0 and config["seed"] == 1
    assert baselines.main(args) == 0  # finished runs are skipped, not trained again
    assert (out / "raw_s1" / "train.log").read_text().count("done:") == 1
    assert all(int(r["run_steps"]) == 1024 for r in rows)
    csv_path.unlink()
    assert baselines.main([*args, "--gather-only", "--seeds", "1", "7"]) == 0  # seed 7 has no run: left out
    assert list(csv.DictReader(open(csv_path))) == rows
    assert baselines.main(["--gather-only", "--out", str(tmp_path / "none")]) == 2


def test_the_fit_keeps_the_epoch_with_the_lowest_held_out_regret(exit_run):
    import torch

    from conquian_train.envs import make_vec_env
    from conquian_train.imitation import fit_imitation
    from conquian_train.recipes.ppo import TrainConfig

    sb3c = pytest.importorskip("sb3_contrib")
    data = ImitationData.concatenate(
        [ImitationData.load(p, "meld")[0] for p in sorted((exit_run / "labels").glob("*.npz"))]
    )
    model = sb3c.MaskablePPO("MlpPolicy", make_vec_env(("random",), 1, features="meld"), seed=0)
    weights = []

    def log(line):
        if " epoch " in line:  # after each epoch: its weights
            weights.append({k: v.detach().clone() for k, v in model.policy.state_dict().items()})

    settings = dataclasses.replace(TrainConfig().imitation(), epochs=6, lr=3e-3, best_epoch=True)
    rows = fit_imitation(model.policy, data, settings, 0, "t", log)
    kept = [r for r in rows if r["kept"]]
    assert len(kept) == 1
    regrets = [r["holdout_regret"] for r in rows]
    assert kept[0]["holdout_regret"] == min(regrets)
    final = model.policy.state_dict()
    assert all(torch.equal(final[k], weights[kept[0]["epoch"] - 1][k]) for k in final)


def test_the_scorer_curve_script_fits_plays_and_writes(exit_run, tmp_path):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "scorer_curve", Path(__file__).parent.parent / "examples" / "scorer_curve.py"
    )
    curve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(curve)
    out = tmp_path / "curve.csv"
    assert curve.main([str(exit_run), "--shards", "1", "2", "--games", "4", "--csv", str(out),
                       "--png", str(tmp_path / "c.png")]) == 0  # fmt: skip
    rows = list(csv.DictReader(open(out)))
    assert [int(r["shards"]) for r in rows] == [1, 2]
    assert int(rows[0]["labelled_decisions"]) < int(rows[1]["labelled_decisions"])
    assert all(0 <= float(r["low"]) <= float(r["score"]) <= float(r["high"]) <= 1 for r in rows)
    assert (tmp_path / "c.png").is_file()
    assert curve.main([str(exit_run), "--shards", "9"]) == 2  # more shards than the run has


def test_the_held_out_regret_script_measures_scorers_by_a_runs_labels(exit_run, capsys):
    import importlib.util
    from pathlib import Path

    from conquian_train.scorer_fit import ScorerSettings, fit_scorer

    spec = importlib.util.spec_from_file_location(
        "held_out_regret", Path(__file__).parent.parent / "examples" / "held_out_regret.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(exit_run), str(exit_run / "round0.npz"), "--rounds", "0"]) == 0
    out = capsys.readouterr().out
    greedy = float(out.split("greedy: regret ")[1].split()[0])
    mine = float(out.split("round0.npz: regret ")[1].split()[0])
    # the fit's own held-out measure of round 0 (the same games, the same values)
    data = ImitationData.concatenate(
        [ImitationData.load(p, "meld")[0] for p in sorted((exit_run / "labels").glob("r00_*"))]
    )
    _, report = fit_scorer(data, ScorerSettings(hidden=(8,), epochs=1), seed=0)
    assert greedy == pytest.approx(report[0]["greedy_held_out_regret"], abs=1e-5)
    assert 0 <= mine
    assert script.main([str(exit_run), str(exit_run / "round0.npz"), "--rounds", "7"]) == 2  # no such round


def test_the_curve_starts_at_the_network_round_0_fits_from():
    """Step 0 evaluates initial_scorer(hidden, seed): fitting from it or from nothing (fit_scorer's
    own random draw under the same seed) gives the same network, so the first point changes no run."""
    from conquian_train.scorer_fit import ScorerSettings, fit_scorer, initial_scorer

    recorder = exit_mod.ViewRecorder(make_agent("greedy"), "meld")
    hands, stock = deal_for_seed(21)
    play_game([recorder, make_agent("greedy")], hands=hands, stock=stock, seed=3)
    from agents.search.pimc import analyze

    rows = [r for r in recorder.rows if r[3] < 0]
    values, _, chosen = analyze([r[2] for r in rows], iterations=30, seed=1)
    data = ImitationData.from_decisions(
        [
            (o, m, int(a), 0.0, q, 5 * i + 1)
            for i, ((o, m, _, _), a, q) in enumerate(zip(rows, chosen, values, strict=True))
        ],
        "meld",
    )
    settings = ScorerSettings(hidden=(16, 8), epochs=2, holdout=0)
    start = initial_scorer((16, 8), seed=7)
    again = initial_scorer((16, 8), seed=7)
    assert all(np.array_equal(w, v) for (w, _), (v, _) in zip(start.layers, again.layers, strict=True))
    assert not np.array_equal(start.layers[0][0], initial_scorer((16, 8), seed=8).layers[0][0])
    a, _ = fit_scorer(data, settings, seed=7, start=start)
    b, _ = fit_scorer(data, settings, seed=7)
    assert all(np.array_equal(w, v) and np.array_equal(c, d) for (w, c), (v, d) in zip(a.layers, b.layers, strict=True))


def test_the_held_out_positions_are_searched_again_in_the_run_s_own_games(exit_run, tmp_path, capsys):
    """examples/held_out_regret.py --precise replays the held-out games through play_games (the very
    games of the shards, checked row by row) and prints every regret by phase; a shard that is not
    the replayed games is refused."""
    import importlib.util
    import shutil
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "held_out_regret.py"
    spec = importlib.util.spec_from_file_location("held_out_regret", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = str(exit_run / "round0.npz")
    assert example.main([str(exit_run), model, "--rounds", "0", "1", "--precise", "40"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert set(lines) == {"greedy", "teacher", model}
    assert lines["greedy"][-1] == "1.00" and all(0 <= float(v) <= 1 for v in lines[model][1:4])  # regrets; then a ratio
    labelled, precise = example.precise_labels(exit_run, [0], None, 40, seed=5)
    assert np.array_equal(labelled.obs, precise.obs) and (labelled.game % 5 == 0).all()
    assert np.array_equal(~np.isnan(precise.q.astype(np.float32)), precise.masks)  # every legal action searched
    copy = tmp_path / "run"
    shutil.copytree(exit_run, copy)
    data, meta = ImitationData.load(copy / "labels" / "r00_0001.npz", "meld")
    ImitationData.save(ImitationData(data.obs[::-1].copy(), data.masks, data.actions, data.returns, data.q, data.game),
                       copy / "labels" / "r00_0001.npz", meta)  # fmt: skip
    with pytest.raises(SystemExit, match="r00_0001.npz are not its games"):
        example.precise_labels(copy, [0], None, 40, seed=5)


def test_a_deep_sets_scorer_run_fits_saves_plays_and_refuses_a_plain_start(exit_run, tmp_path, capsys):
    """``--pool-after 0``: the run fits and saves a deep-sets scorer that the scorer spec
    plays; starting it from a plain scorer file, or pooling a ppo network, is refused by name."""
    out = tmp_path / "pooled"
    assert train.main([*_args(out, rounds=1), "--pool-after", "0"]) == 0
    final = load_scorer(out / "final.npz")
    assert final.pool_after == 0 and final.meta["format"] == "conquian-action-scorer/2"
    assert final.layers[1][0].shape == (3 * 128, 128)
    hands, stock = deal_for_seed(4)
    record = play_game([make_agent(f"scorer:{out}/final.npz", 0), make_agent("greedy", 1)], hands=hands, stock=stock,
                       seed=4)  # fmt: skip
    assert record.moves
    with pytest.raises(ValueError, match="pools after layer None"):
        train.main([*_args(tmp_path / "bad", rounds=1), "--pool-after", "0", "--init", str(exit_run / "final.npz")])
    capsys.readouterr()
    assert train.main([*_args(tmp_path / "bad2", rounds=1, network="ppo"), "--pool-after", "0"]) != 0
    assert "pool_after=0 is the scorer's; network='ppo' has none" in capsys.readouterr().err
    assert not (tmp_path / "bad2").exists()
