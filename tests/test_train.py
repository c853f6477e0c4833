"""Training: the Gymnasium registration, the meld features, train.py end to end, the ppo bot."""

from __future__ import annotations

import csv
import json
import random
import warnings

import numpy as np
import pytest

from agents import SpecError, make_agent
from agents.greedy.greedy import GreedyAgent
from agents.networks.batched import BatchPolicy
from agents.networks.ppo import DEFAULT_MODEL, NumpyPolicy, PolicyAgent, load_policy
from agents.scorer.features import FEATURE_LAYOUT, FEATURE_SIZE, FeatureEncoder, FeatureObservation
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.game import new_game
from conquian_env.observation import OBS_SIZE
from conquian_env.view import PlayerView
from conquian_env.wrappers import SingleAgentEnv
from conquian_train.evaluation import Evaluator, evaluate_policy
from tests.conftest import permute_for

sb3c = pytest.importorskip("sb3_contrib")
train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo


# --------------------------------------------------------------------------- registration


def test_gymnasium_make_gives_the_single_agent_view():
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    import conquian_env

    env = gymnasium.make(conquian_env.GYM_ENV_ID, opponent="greedy", seat=1)
    assert isinstance(env.unwrapped, SingleAgentEnv)
    assert env.unwrapped.opponent.name == "greedy"
    obs, info = env.reset(seed=3)
    assert obs.shape == (OBS_SIZE,) and env.unwrapped.seat == 1
    assert np.array_equal(env.unwrapped.action_masks(), info["action_mask"].astype(bool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped, skip_render_check=True)


def test_gymnasium_made_env_trains_with_maskable_ppo():
    import gymnasium

    import conquian_env

    env = gymnasium.make(conquian_env.GYM_ENV_ID, opponent="random")
    model = sb3c.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(64)  # masks reach the model through the wrappers gymnasium.make adds


# --------------------------------------------------------------------------- features


def _positions(n_games: int, seed: int = 0):
    """Mid-game positions (state, player to move) from greedy-vs-random games."""
    rng = np.random.default_rng(seed)
    bots = [GreedyAgent(), make_agent("random", seed)]
    for g in range(n_games):
        state = new_game(seed=int(rng.integers(1 << 30)))
        for p in (0, 1):
            bots[p].reset(p, g)
        while not state.is_terminal():
            yield state.clone()
            p = state.player
            view = PlayerView(state, p)
            state.apply(bots[p].act(None, None, view) if p == 0 else bots[p].act(None, _mask(state), view))


def _mask(state):
    from conquian_env.observation import action_mask

    return action_mask(state, state.player)


def test_feature_layout_is_consistent():
    end = OBS_SIZE
    for _, start, length in FEATURE_LAYOUT:
        assert start == end
        end += length
    assert end == FEATURE_SIZE


def test_features_never_depend_on_hidden_cards():
    rng = random.Random(0)
    checked = changed = 0
    for state in _positions(25):
        for observer in (state.player, 1 - state.player):
            if state.stock_pos >= 20 or state.hands[1 - observer] & ~state.chosen == 0:
                continue
            base = FeatureEncoder().encode(PlayerView(state, observer))
            for _ in range(2):
                variant = permute_for(state, observer, rng)
                changed += variant.hands[1 - observer] != state.hands[1 - observer]
                assert np.array_equal(FeatureEncoder().encode(PlayerView(variant, observer)), base)
            checked += 1
    assert checked > 600 and changed > checked


def test_the_hidden_card_check_catches_a_peeking_feature():
    import agents.scorer.features as features

    state = next(s for i, s in enumerate(_positions(1, seed=3)) if i == 10)
    real = features.FeatureEncoder.encode

    def peeking(self, view):  # leaks the opponent's hand into the 'live' plane
        out = real(self, view)
        hidden = view._state.hands[1 - view.player]
        out[features.OBS_SIZE : features.OBS_SIZE + 40] = [hidden >> c & 1 for c in range(40)]
        return out

    rng = random.Random(1)
    variant = permute_for(state, state.player, rng)
    assert not np.array_equal(
        peeking(FeatureEncoder(), PlayerView(state, state.player)),
        peeking(FeatureEncoder(), PlayerView(variant, state.player)),
    )


def test_features_carry_the_greedy_choice_and_the_raw_observation():
    from conquian_env.observation import encode

    greedy_at = dict((name, start) for name, start, _ in FEATURE_LAYOUT)["greedy_action"]
    encoder, greedy = FeatureEncoder(), GreedyAgent()
    for state in _positions(10, seed=1):
        f = encoder.encode(PlayerView(state, state.player))
        assert f.dtype == np.float32 and f.shape == (FEATURE_SIZE,)
        assert np.array_equal(f[:OBS_SIZE], encode(state, state.player))
        assert f.min() >= -1 and f.max() <= 1
        assert int(np.argmax(f[greedy_at : greedy_at + 85])) == greedy.choose(PlayerView(state, state.player))


def test_feature_env_passes_the_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(FeatureObservation(SingleAgentEnv(opponent="greedy")), skip_render_check=True)
        sb3_check(FeatureObservation(SingleAgentEnv(opponent="random")), warn=True)


# --------------------------------------------------------------------------- train.py


def _tiny_args(out, total=1024):
    return [
        "--out", str(out), "--total-steps", str(total), "--bc-games", "40", "--bc-epochs", "2",
        "--n-envs", "2", "--n-steps", "256", "--batch-size", "128", "--n-epochs", "1",
        "--eval-every", "512", "--eval-games", "8", "--checkpoint-every", "512", "--snapshot-every", "256",
        "--workers", "1", "--no-progress",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    assert train.main(_tiny_args(out)) == 0
    return out


def test_train_writes_a_complete_run(tiny_run):
    for name in ("config.json", "eval.csv", "bc.csv", "learning_curve.png", "best.zip", "final.zip", "train.log"):
        assert (tiny_run / name).is_file(), name
    assert (tiny_run / "checkpoints" / "latest.zip").is_file()
    assert any((tiny_run / "tb").rglob("events.out.tfevents.*"))
    config = json.loads((tiny_run / "config.json").read_text())
    assert config["total_steps"] == 1024 and config["opponents"] == ["greedy@4", "random@1", "self@2", "past@1"]
    rows = list(csv.DictReader(open(tiny_run / "eval.csv")))
    assert {r["opponent"] for r in rows} == {"random", "greedy"}
    assert sorted({int(r["step"]) for r in rows}) == [0, 512, 1024]
    for r in rows:
        assert int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == int(r["games"]) == 8
        assert float(r["low"]) <= float(r["score"]) <= float(r["high"])
    state = json.loads((tiny_run / "checkpoints" / "state.json").read_text())
    assert state["num_timesteps"] == 1024
    assert state["snapshot_steps"], "snapshots of the learner joined the pool"


def test_trained_model_saves_loads_and_never_plays_illegal(tiny_run):
    model = sb3c.MaskablePPO.load(tiny_run / "final.zip")
    env = FeatureObservation(SingleAgentEnv(opponent="random"))
    obs, _ = env.reset(seed=0)
    for _ in range(200):
        mask = env.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        assert mask[int(action)]
        obs, _, done, _, _ = env.step(int(action))
        if done:
            obs, _ = env.reset()
    for spec in (f"ppo:{tiny_run / 'best.zip'}", f"ppo:{tiny_run / 'final.zip'},deterministic=false"):
        bot = make_agent(spec, seed=1)
        for seed in range(4):
            hands, stock = deal_for_seed(seed)
            pair = [bot, make_agent("greedy")]
            record = play_game(pair if seed % 2 else pair[::-1], hands=hands, stock=stock, seed=seed)
            assert record.failure is None
            record.replay()


def test_numpy_policy_matches_the_torch_policy(tiny_run):
    import torch

    model = sb3c.MaskablePPO.load(tiny_run / "final.zip")
    policy = NumpyPolicy.from_sb3(model.policy)
    assert policy.features == "meld"
    encoder = FeatureEncoder()
    for state in list(_positions(3, seed=2))[:60]:
        obs = encoder.encode(PlayerView(state, state.player))
        mask = _mask(state).astype(bool)
        with torch.no_grad():
            logits = model.policy.get_distribution(torch.as_tensor(obs[None]), action_masks=mask[None])
            expected = logits.distribution.logits.numpy()[0]
        ours = policy.logits(obs)[mask]
        ours = ours - ours.max()
        ours -= np.log(np.exp(ours).sum())  # log-softmax over the legal actions
        assert np.allclose(ours, expected[mask], atol=1e-4)
        assert policy.act(obs, mask) == int(np.argmax(np.where(mask, expected, -np.inf)))


def test_resume_continues_the_same_run(tmp_path):
    out = tmp_path / "r"
    assert train.main(_tiny_args(out, total=512)) == 0
    before = list(csv.DictReader(open(out / "eval.csv")))
    # a finished run is not silently restarted
    assert train.main(_tiny_args(out, total=512)) == 2
    assert train.main(["--resume", str(out), "--total-steps", "1024", "--no-progress", "--workers", "1"]) == 0
    state = json.loads((out / "checkpoints" / "state.json").read_text())
    assert state["num_timesteps"] == 1024
    rows = list(csv.DictReader(open(out / "eval.csv")))
    assert rows[: len(before)] == before and int(rows[-1]["step"]) == 1024
    assert max(int(r["step"]) for r in rows) == 1024
    assert len(list((out / "tb").iterdir())) == 1, "TensorBoard logs continue in the same folder"
    assert "resumed" in (out / "train.log").read_text()


def test_bad_configs_are_rejected_before_any_work(tmp_path, capsys):
    out = tmp_path / "bad"
    assert train.main(["--out", str(out), "--features", "pixels"]) == 2
    assert "features must be 'meld' or 'raw'" in capsys.readouterr().err
    assert train.main(["--out", str(out), "--opponents", "greedy@x"]) == 2
    assert "weight" in capsys.readouterr().err
    assert train.main(["--out", str(out), "--opponents", "nosuchbot@1"]) == 2
    assert "unknown bot" in capsys.readouterr().err
    assert train.main(["--out", str(out), "--best-by", "pimc"]) == 2
    assert not (out / "checkpoints").exists()
    assert train.main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "no config.json" in capsys.readouterr().err


def test_help_lists_every_knob(capsys):
    import dataclasses

    with pytest.raises(SystemExit):
        train.main(["--help"])
    text = capsys.readouterr().out
    from conquian_env.rules import Rules

    for f in dataclasses.fields(train.TrainConfig):
        if f.name == "rules":  # one flag per rule field, each with the field's help
            assert all(f"--{n.replace('_', '-')}, --no-{n.replace('_', '-')}" in text for n in Rules.field_names())
            continue
        assert "--" + f.name.replace("_", "-") in text
        assert f.metadata["help"].split()[0] in text


# --------------------------------------------------------------------------- the ppo bot


def test_corrupt_and_mismatched_model_files(tmp_path, tiny_run):
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(SpecError, match="cannot load"):
        make_agent(f"ppo:{corrupt}")
    # a model for some other game (wrong observation size) is refused with the sizes named
    import gymnasium

    other = sb3c.MaskablePPO(
        "MlpPolicy",
        _OtherGame(gymnasium),
        n_steps=32,
        batch_size=32,
    )
    path = tmp_path / "other.zip"
    other.save(path)
    with pytest.raises(SpecError, match="85 actions"):
        make_agent(f"ppo:{path}")


def _OtherGame(gymnasium):  # noqa: N802
    class Other(gymnasium.Env):
        observation_space = gymnasium.spaces.Box(0, 1, (7,), np.float32)
        action_space = gymnasium.spaces.Discrete(3)

        def reset(self, *, seed=None, options=None):
            return np.zeros(7, np.float32), {}

        def step(self, action):
            return np.zeros(7, np.float32), 0.0, True, False, {}

        def action_masks(self):
            return np.ones(3, bool)

    return Other()


def test_policy_of_unknown_input_size_is_refused():
    from agents.networks.ppo import features_for_size

    assert features_for_size(OBS_SIZE) == "raw" and features_for_size(FEATURE_SIZE) == "meld"
    with pytest.raises(ValueError, match=f"{OBS_SIZE}.*{FEATURE_SIZE}"):
        features_for_size(10)
    w = np.zeros((3, 10), np.float32)
    with pytest.raises(ValueError, match="85 action logits"):
        NumpyPolicy([(w, np.zeros(3), "Identity")], features="raw")


def test_shipped_model_plays_as_the_ppo_bot():
    assert DEFAULT_MODEL.is_file() and DEFAULT_MODEL.stat().st_size < 5e6
    bot = make_agent("ppo", seed=0)
    assert bot.name == "ppo" and isinstance(bot, PolicyAgent)
    for seed in range(4):
        hands, stock = deal_for_seed(seed)
        pair = [bot, make_agent("greedy")]
        record = play_game(pair if seed % 2 else pair[::-1], hands=hands, stock=stock, seed=seed)
        assert record.failure is None and record.moves > 0
        record.replay()


def test_export_writes_a_small_playable_model(tiny_run, tmp_path):
    dest = tmp_path / "ship" / "model.zip"
    assert train.main(["--export", str(tiny_run / "final.zip"), str(dest)]) == 0
    assert dest.stat().st_size < 0.5 * (tiny_run / "final.zip").stat().st_size  # no optimizer moments
    a, b = make_agent(f"ppo:{dest}"), make_agent(f"ppo:{tiny_run / 'final.zip'}")
    for state in list(_positions(2, seed=4))[:40]:
        obs = FeatureEncoder().encode(PlayerView(state, state.player))
        assert a.policy.act(obs, _mask(state)) == b.policy.act(obs, _mask(state))
    assert train.main(["--export", str(tmp_path / "missing.zip"), str(dest)]) == 2


def test_searching_teacher_gives_soft_targets_and_dagger_rounds(tmp_path):
    out = tmp_path / "d"
    args = _tiny_args(out, total=256)
    args[args.index("--bc-games") + 1] = "6"
    args += [
        "--teacher",
        "rollout:samples=2",
        "--bc-opponents",
        "greedy",
        "--dagger-rounds",
        "1",
        "--dagger-games",
        "4",
    ]
    args[args.index("--n-steps") + 1] = "128"
    assert train.main(args) == 0
    data = np.load(out / "bc_data.npz")
    searched = ~np.isnan(data["q"].astype(np.float32)).all(axis=1)
    assert searched.any() and not searched.all()  # meld phases and single choices are not searched
    q = data["q"][searched].astype(np.float32)
    legal = data["masks"][searched]
    assert np.array_equal(~np.isnan(q), legal), "an action value for exactly the legal actions"
    rows = list(csv.DictReader(open(out / "bc.csv")))
    assert {r["stage"] for r in rows} == {"bc", "dagger1"}
    assert all(float(r["holdout_regret"]) >= 0 for r in rows if r["holdout_regret"] != "nan")
    stages = [r["stage"] for r in csv.DictReader(open(out / "eval.csv"))]
    assert stages[0] == "bc" and "warm start" in stages and stages[-1] == "ppo"
    # the data set is reused by a later run without playing again
    again = tmp_path / "again"
    args2 = _tiny_args(again, total=256) + ["--bc-data", str(out / "bc_data.npz")]
    args2[args2.index("--n-steps") + 1] = "128"
    assert train.main(args2) == 0
    assert "decisions of rollout:samples=2 from" in (again / "train.log").read_text()


def test_shipped_model_beats_random():
    """The shipped model is no random policy (the full measurement is in the README)."""
    from conquian_arena.schedule import short_name
    from conquian_arena.stats import score_interval

    bot, rnd = make_agent("ppo"), make_agent("random", seed=5)
    scores = []
    for deal in range(30):
        hands, stock = deal_for_seed(9000 + deal)
        for swap in (0, 1):
            record = play_game([bot, rnd] if swap == 0 else [rnd, bot], hands=hands, stock=stock, seed=deal)
            scores.append(0.5 if record.winner is None else float(record.winner == swap))
    interval = score_interval(np.reshape(scores, (-1, 2)).mean(axis=1), unit="deals")
    assert interval.low > 0.6, interval
    assert short_name("ppo") == "ppo"


def test_forcing_variant_run(tmp_path):
    out = tmp_path / "f"
    args = _tiny_args(out, total=256) + ["--forcing"]
    args[args.index("--n-steps") + 1] = "128"
    assert train.main(args) == 0
    assert json.loads((out / "config.json").read_text())["rules"] == {"forcing": True}
    data = np.load(out / "bc_data.npz")
    from conquian_env.observation import OBS_LAYOUT

    forcing_flag = dict((n, s) for n, s, _, _ in OBS_LAYOUT)["forcing"]
    assert (data["obs"][:, forcing_flag] == 1).all(), "the warm-start games were played with the variant on"


def test_ctrl_c_keeps_the_last_checkpoint_and_resume_finishes_the_same_run(tmp_path, monkeypatch, tiny_run):
    """Ctrl-C in the middle of a segment keeps the last checkpoint (step 0 here: the one at 512 comes
    after the evaluation that is interrupted); the resume makes the uninterrupted run's files."""
    from tests import killfuzz

    out = tmp_path / "i"
    real_evaluate = Evaluator.__call__

    def interrupted(self, model, step, stage="ppo"):
        if step >= 512:
            raise KeyboardInterrupt
        return real_evaluate(self, model, step, stage)

    monkeypatch.setattr(Evaluator, "__call__", interrupted)
    assert train.main(_tiny_args(out, total=1024)) == 130
    state = json.loads((out / "checkpoints" / "state.json").read_text())
    assert state["num_timesteps"] == 0 and (out / "checkpoints" / "latest.zip").is_file()
    assert "interrupted at step 512" in (out / "train.log").read_text()
    monkeypatch.setattr(Evaluator, "__call__", real_evaluate)
    assert train.main(["--resume", str(out), "--no-progress", "--workers", "1"]) == 0
    assert json.loads((out / "checkpoints" / "state.json").read_text())["num_timesteps"] == 1024
    assert not killfuzz.differences(killfuzz.folder_contents(tiny_run), killfuzz.folder_contents(out))


def test_evaluations_see_the_updated_policy_and_the_final_model_is_evaluated(tmp_path):
    # before: evaluations ran in _on_rollout_end, before SB3's update, so every row showed
    # the previous weights and the final update was never evaluated
    out = tmp_path / "e"
    args = [
        "--out", str(out), "--total-steps", "1024", "--n-envs", "8", "--n-steps", "64", "--batch-size", "64",
        "--bc-games", "10", "--bc-epochs", "1", "--eval-games", "40", "--net-arch", "32", "--learning-rate", "0.01",
        "--eval-every", "512", "--checkpoint-every", "512", "--opponents", "greedy@1", "--workers", "1",
        "--no-progress",
    ]  # fmt: skip
    assert train.main(args) == 0
    rows = [r for r in csv.DictReader(open(out / "eval.csv")) if r["opponent"] == "greedy"]
    assert [int(r["step"]) for r in rows] == [0, 512, 1024]
    config = train.TrainConfig.from_dict(json.loads((out / "config.json").read_text()))
    final = evaluate_policy(load_policy(out / "final.zip"), "greedy", config.eval_games, config.eval_seed, batched=True)
    last = rows[-1]
    logged = (int(last["wins"]), int(last["draws"]), int(last["losses"]))
    assert (final["wins"], final["draws"], final["losses"]) == logged
    log = (out / "train.log").read_text()
    assert "ends at step" not in log  # 1024 is a whole number of rollouts of 8 x 64


def test_a_total_not_a_whole_number_of_rollouts_is_said(tmp_path):
    out = tmp_path / "w"
    assert train.main(_tiny_args(out, total=700)) == 0
    log = (out / "train.log").read_text()
    assert "PPO collects whole rollouts of 512 steps" in log and "ends at step 1,024, not 700" in log


def _policy_tensors(path):
    import io
    import zipfile

    import torch

    with zipfile.ZipFile(path) as z:
        return torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True)


def test_the_same_seed_trains_the_same_weights(tmp_path):
    """Two runs of one config on one machine give identical weights (256 games: the compiled
    kernels run in parallel, learner snapshots play in the pool) and warm-start data."""
    import torch

    def run(name, workers):
        out = tmp_path / name
        args = [
            "--out", str(out), "--total-steps", "512", "--bc-games", "12", "--bc-epochs", "1", "--n-envs", "256",
            "--n-steps", "2", "--batch-size", "256", "--n-epochs", "1", "--eval-every", "0", "--eval-games", "2",
            "--checkpoint-every", "0", "--snapshot-every", "256", "--net-arch", "32", "--workers", str(workers),
            "--no-progress",
        ]  # fmt: skip
        assert train.main(args) == 0
        return _policy_tensors(out / "final.zip"), np.load(out / "bc_data.npz")

    (a, data_a), (b, data_b) = run("a", 1), run("b", 1)
    assert list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["action_net.bias"], torch.zeros_like(a["action_net.bias"]))
    for key in ("obs", "masks", "actions", "returns", "game"):
        assert np.array_equal(data_a[key], data_b[key]), key


@pytest.mark.parametrize("batched", [True, False])
def test_evaluation_at_a_seed_plays_the_games_of_conquian_evaluate_at_that_seed(tiny_run, tmp_path, batched):
    """train.py's evaluation at eval_seed S deals what ``conquian-evaluate MODEL greedy --seed S``
    deals, seat for seat (one schedule, one seed derivation), so the deterministic policy and
    greedy play the very same games there, on the batched engine or game by game."""
    from conquian_arena.pair import play_pair
    from conquian_arena.tournament import main as evaluate_main

    seed, games, model = 1_000_003, 40, tiny_run / "final.zip"
    out = tmp_path / "t"
    args = [f"ppo:{model}", "greedy", "--games", str(games), "--seed", str(seed), "--out", str(out), "-j", "1"]
    assert evaluate_main([*args, "--no-plot", "--no-html", "--no-progress"]) == 0
    lines = sorted(
        (json.loads(line) for line in (out / "games.jsonl").read_text().splitlines()), key=lambda g: g["index"]
    )
    ours = evaluate_policy(load_policy(model), "greedy", games, seed, batched=batched)
    wins = sum(g["winner_label"] == g["pair"][0] for g in lines)
    losses = sum(g["winner_label"] == g["pair"][1] for g in lines)
    assert (ours["games"], ours["wins"], ours["losses"]) == (games, wins, losses)
    # game by game: the evaluator train.py calls gives each game's deal and length
    policy = load_policy(model)
    played = play_pair(PolicyAgent(policy), "greedy", games, seed, a_batch=BatchPolicy(policy) if batched else None)
    keys = ("deal", "swap", "deal_seed", "moves")
    assert [tuple(g[k] for k in keys) for g in played] == [tuple(g[k] for k in keys) for g in lines]


def test_progress_in_a_log_has_no_carriage_returns(tmp_path, capfd):
    """Standard error that is no terminal (``make train > log 2>&1``) gets no progress frames;
    ``--progress`` asks for the bar anyway (as conquian-evaluate's)."""
    args = [a for a in _tiny_args(tmp_path / "p", total=256) if a != "--no-progress"]
    args[args.index("--n-steps") + 1] = "128"
    args[args.index("--bc-games") + 1] = "4"
    assert train.main(args) == 0
    err = capfd.readouterr().err
    assert "\r" not in err and "it/s" not in err and "step/s" not in err
    assert "done: 256 steps" in err
