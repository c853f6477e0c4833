"""The self-play trainer (``conquian-train selfplay``): its links and advantages by hand, its frames
replayed through the scalar engine, the hidden cards kept from the policy, a short run that learns,
saves, loads, plays and resumes, and its bad knobs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numba")
train = pytest.importorskip("train")

from agents.batched import make_batch_opponent  # noqa: E402
from agents.networks.selfplay import read_selfplay, save_selfplay  # noqa: E402
from agents.registry import make_agent  # noqa: E402
from conquian_env import game as G  # noqa: E402
from conquian_env import kernels as K  # noqa: E402
from conquian_env.model_layouts import FEATURE_SETS  # noqa: E402
from conquian_env.vector import VectorGame, deal_cards  # noqa: E402
from conquian_train.learner import Learner, Network, UpdateSettings  # noqa: E402
from conquian_train.recipes.selfplay import SelfPlayConfig, SelfPlayRun, time_left  # noqa: E402
from conquian_train.rollout import PENDING, TERMINAL, SeatRollout, hidden_planes  # noqa: E402

SETTINGS = UpdateSettings(64, 1, 1e-3, 0.2, 0.01, 0.5, 0.5, 0.9, 0.8)


def tiny(out: Path, *more: str) -> list[str]:
    return ["selfplay", "--out", str(out), "--total-frames", "3000", "--num-games", "32", "--horizon", "16",
            "--hidden", "16", "--minibatch", "64", "--eval-every", "1500", "--checkpoint-every", "1500",
            "--snapshot-every", "1000", "--eval-games", "8", "--workers", "1", "--torch-threads", "1",
            "--no-progress", *more]  # fmt: skip


# --------------------------------------------------------------------------- links and advantages


def test_per_seat_advantages_equal_the_hand_computed_ones():
    """Game 0: seat 0 decides at rows 0, 2, 4; seat 1 at rows 1, 3; seat 0 wins.  Game 1: seat 1 decides
    at row 5 and is still pending when the rollout stops."""
    data = SeatRollout(2, 16, hidden=False)
    for g, p in [(0, 0), (0, 1), (0, 0), (0, 1), (0, 0), (1, 1)]:
        data.add(np.array([g]), np.array([p]))
    data.end(np.array([0]), np.array([[1.0, -1.0], [0.0, 0.0]], dtype=np.float32))
    assert data.nxt[:6].tolist() == [2, 3, 4, TERMINAL, TERMINAL, PENDING]
    assert data.reward[3] == -1 and data.reward[4] == 1
    v = np.array([0.1, -0.2, 0.3, 0.4, 0.5, 0.6], dtype=np.float32)
    data.value[:6] = v
    gamma, lam = 0.9, 0.8
    data.compute_advantages(gamma, lam)
    a4 = 1 - v[4]
    a2 = gamma * v[4] - v[2] + gamma * lam * a4
    a0 = gamma * v[2] - v[0] + gamma * lam * a2
    a3 = -1 - v[3]
    a1 = gamma * v[3] - v[1] + gamma * lam * a3
    assert np.allclose(data.adv[:6], [a0, a1, a2, a3, a4, 0.0], atol=1e-6)
    assert data.trainable().tolist() == [0, 1, 2, 3, 4]
    # the pending row goes to the front of the next rollout, and its seat's next decision links to it
    assert data.carry() == 1 and data.count == 1 and data.last[1, 1] == 0 and data.last[0].tolist() == [-1, -1]
    data.add(np.array([1]), np.array([1]))
    assert data.nxt[0] == 1


def collect_with_record(n: int, steps: int, seed: int):
    """The recipe's collection over ``n`` games for ``steps`` steps (a quarter of them against greedy),
    with every row's (game, seat) recorded, and every game that ended as (its start, its actions, winner)."""
    config = SelfPlayConfig(out="unused", num_games=n, horizon=steps, hidden=(16,), pool_share=0.25, torch_threads=1,
                            seed=seed)  # fmt: skip
    run = SelfPlayRun.__new__(SelfPlayRun)  # the loop's pieces without a run folder
    run.config = config
    inputs = FEATURE_SETS[config.observation].size  # the observation and its planes, as the recipe sizes them
    run.learner = Learner((16,), True, SETTINGS, bf16=False, seed=seed, inputs=inputs)
    run.games = VectorGame(n, seed=0, first="alternate", illegal_action="penalize", parallel=False)
    run.rollouts = [SeatRollout(n, n * steps, hidden=True, inputs=inputs) for _ in range(2)]
    run.pooled, run.pool, run.snapshots = n // 4, [("greedy", 1.0)], []
    run.bots = {"greedy": make_batch_opponent("greedy", 0)}
    run.run = type("State", (), {"state": {"num_timesteps": 0}})()
    run.start_segment()
    run.data = run.rollouts[0]
    who: list[tuple[int, int]] = []
    add, step = run.data.add, run.games.step

    def recording_add(games, seats):
        who.extend(zip(games.tolist(), seats.tolist(), strict=True))
        return add(games, seats)

    starts = {g: run.games.get_game(g) for g in range(n)}
    played: dict[int, list[int]] = {g: [] for g in range(n)}
    finished: list[tuple[G.GameState, list[int], int]] = []

    def recording_step(actions):
        for g in range(n):
            played[g].append(int(actions[g]))
        res = step(actions)
        for g in np.flatnonzero(res.dones):
            finished.append((starts[g], played[g], int(res.winners[g])))
            starts[g], played[g] = run.games.get_game(g), []
        return res

    run.data.add, run.games.step = recording_add, recording_step
    frames = run.collect()
    return run, who, frames, finished


def test_epochs_make_that_many_passes_over_the_known_rows_each_row_once_a_pass():
    """An update with ``epochs`` 3 takes three gradient steps per minibatch of each pass, and each pass
    sees every trainable row exactly once (a new order each time)."""
    import dataclasses

    run, _, _, _ = collect_with_record(16, 60, seed=6)
    data = run.data
    known = data.trainable()
    learner = Learner((16,), True, dataclasses.replace(SETTINGS, epochs=3), bf16=False, seed=1,
                      inputs=data.obs.shape[1])  # fmt: skip
    seen: list[np.ndarray] = []
    inputs = learner._inputs

    def spy(d, rows):
        seen.append(np.array(rows))
        return inputs(d, rows)

    learner._inputs = spy
    steps = {"n": 0}
    step = learner.optimizer.step

    def counting(*a, **k):
        steps["n"] += 1
        return step(*a, **k)

    learner.optimizer.step = counting
    learner.update(data, np.random.default_rng(0))
    per_pass = -(-len(known) // SETTINGS.minibatch)
    assert steps["n"] == 3 * per_pass and len(seen) == 3 * per_pass
    passes = [np.concatenate(seen[i * per_pass : (i + 1) * per_pass]) for i in range(3)]
    for rows in passes:
        assert sorted(rows.tolist()) == sorted(known.tolist())
    assert passes[0].tolist() != passes[1].tolist()


def test_a_rollout_one_row_longer_than_the_minibatches_keeps_the_weights_finite():
    """A last minibatch of one row normalized its advantage to NaN, which reached every weight and made
    the learner play illegal moves 100M frames into a run: the passes are split in equal parts."""
    import dataclasses

    run, _, _, _ = collect_with_record(16, 60, seed=6)
    known = len(run.data.trainable())
    learner = Learner((16,), True, dataclasses.replace(SETTINGS, minibatch=known - 1, epochs=2), bf16=False, seed=1,
                      inputs=run.data.obs.shape[1])  # fmt: skip
    learner.update(run.data, np.random.default_rng(0))
    assert all(bool(torch.isfinite(p).all()) for p in learner.net.parameters())
    learner.sample(run.data, slice(0, known))
    assert run.data.mask[np.arange(known), run.data.action[:known]].all()


def test_every_link_joins_one_seat_of_one_game_and_every_frame_is_the_engine_s_game():
    run, who, frames, finished = collect_with_record(16, 120, seed=4)
    data = run.data
    assert len(who) == data.count
    for j, (g, p) in enumerate(who):
        n = data.nxt[j]
        if n >= 0:
            assert n > j and who[n] == (g, p)
            assert not any(who[k] == (g, p) for k in range(j + 1, n))  # the very next decision of that seat
    # frames: every decision of a learning seat (forced ones too); the pool's seat in games 0..3 is not one
    assert frames > data.count and frames <= 16 * 120
    assert finished, "no game ended in 120 steps"
    for state, actions, winner in finished:  # the scalar engine plays each recorded game to the same end
        for a in actions:
            assert state.phase != G.GAME_OVER
            state.check_action(a)  # legal in the scalar engine's judgement
            state.apply(a)
        assert state.phase == G.GAME_OVER and state.winner == winner


def test_the_policy_never_reads_a_hidden_card():
    """The hidden planes change with the opponent's hand and the stock; the logits do not."""
    games = VectorGame(64, seed=3)
    obs, mask = games.observe()
    rows = np.arange(64)
    players = games.state[:, K.PLAYER].copy()
    hid = np.zeros((64, 120), dtype=np.int8)
    hidden_planes(games.state, rows, players, hid)
    left = 20 - games.state[:, K.SPOS]  # the first card is turned already
    assert (hid[:, :40].sum(1) == 10).all() and (hid[:, 40:80].sum(1) == left).all() and (hid[:, 80:].sum(1) == 1).all()
    for k in range(64):  # the opponent's hand is exactly the cards of neither the mover's hand nor the stock
        own = obs[k, :40].astype(bool)
        assert not (hid[k, :40].astype(bool) & own).any() and not (hid[k, 40:80].astype(bool) & own).any()
    net = Network((32,), sees_all=True)
    x = torch.from_numpy(obs).float()
    other = torch.from_numpy(np.roll(hid, 7, axis=0)).float()
    with torch.no_grad():
        l1, v1 = net(x, torch.from_numpy(hid).float())
        l2, v2 = net(x, other)
    assert torch.equal(l1, l2) and not torch.equal(v1, v2)


def test_bfloat16_and_float32_choose_the_same_actions_within_tolerance():
    """On a fixed trained-scale network the most likely legal action agrees in at least 97% of positions."""
    games = VectorGame(512, seed=5)
    for _ in range(7):
        games.step(games.random_actions())
    obs, mask = games.observe()
    torch.manual_seed(0)
    net = Network((256, 256), sees_all=False)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.Linear):
                m.weight.normal_(0, 0.1)
        x = torch.from_numpy(obs)
        full, _ = net(x.float())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            half, _ = net(x.to(torch.bfloat16))
    legal = torch.from_numpy(mask.astype(bool))
    a = full.masked_fill(~legal, -1e9).argmax(1)
    b = half.float().masked_fill(~legal, -1e9).argmax(1)
    choice = legal.sum(1) > 1
    assert (a[choice] == b[choice]).float().mean() >= 0.97


# --------------------------------------------------------------------------- the command


def test_a_short_run_learns_saves_loads_plays_and_resumes_exactly(tmp_path):
    """Learning: after 0.5M frames the network beats its snapshot of the first rollout (the untrained
    network) by more than the interval, on duplicate deals.  The model file plays through the registry
    without an illegal move.  A run stopped at its checkpoint and resumed ends with the uninterrupted
    run's weights (with the update beside the next rollout, and without)."""
    out = tmp_path / "learn"
    args = ["selfplay", "--out", str(out), "--total-frames", "500000", "--num-games", "256", "--horizon", "16",
            "--hidden", "64", "--minibatch", "1024", "--lr", "1e-3", "--eval-every", "0", "--eval-games", "400",
            "--eval-opponents", "greedy", "--best-by", "greedy", "--workers", "1", "--torch-threads", "1",
            "--no-progress", "--eval-seed", "11", "--snapshot-every", "1000000", "--pool-share", "0"]  # fmt: skip
    assert train.main(args) == 0
    rows = [r.split(",") for r in (out / "eval.csv").read_text().splitlines()]
    table = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    last = table[-1]
    assert last["opponent"] == "oldest snapshot" and int(last["step"]) >= 500000
    assert float(last["low"]) > 0.5, last
    assert [int(r["step"]) for r in table if r["opponent"] == "greedy"] == [0, int(last["step"])]
    bot = make_agent(f"selfplay:{out / 'best.npz'}", 0)
    from conquian_arena.match import play_game

    for k in range(4):
        hands, stock = deal_cards(np.random.default_rng(k).permutation(40))
        seats = [bot, make_agent("random", k)] if k % 2 else [make_agent("random", k), bot]
        rec = play_game(seats, hands=hands, stock=stock, seed=k)
        assert rec.failure is None and rec.moves > 0

    # exact resume: the same run stopped at its checkpoint (total_frames 1500) and resumed to 3000
    for overlap in ("--overlap", "--no-overlap"):
        whole, parts = tmp_path / f"whole{overlap}", tmp_path / f"parts{overlap}"
        assert train.main(tiny(whole, overlap)) == 0
        assert train.main(tiny(parts, overlap, "--total-frames", "1500")) == 0
        assert train.main(["selfplay", "--resume", str(parts), "--total-frames", "3000", "--no-progress"]) == 0
        a, b = (np.load(p / "checkpoints" / "latest.npz") for p in (whole, parts))
        assert sorted(a.files) == sorted(b.files)
        for k in a.files:
            assert np.array_equal(a[k], b[k]), (overlap, k)


@pytest.mark.parametrize("observation, inputs", [("potential", 1136), ("raw", 456)])
def test_the_run_trains_on_the_observation_it_names_and_its_files_say_so(observation, inputs, tmp_path):
    """The network, the rollout rows, the pool's snapshots and the model file all read ``--observation``;
    the bot plays its file by the stamp, and a resume reads the snapshots back in that feature set."""
    out = tmp_path / observation
    assert train.main(tiny(out, "--observation", observation, "--total-frames", "1500")) == 0
    policy, meta = read_selfplay(out / "best.npz")
    assert policy.features == observation and meta["feature_set"] == observation
    assert policy.layers[0][0].shape == (16, inputs)
    assert train.main(["selfplay", "--resume", str(out), "--total-frames", "3000", "--no-progress"]) == 0
    assert json.loads((out / "config.json").read_text())["observation"] == observation
    bot = make_agent(f"selfplay:{out / 'final.npz'}", 0)
    assert bot.policy.features == observation


def test_a_model_file_round_trips_and_a_tampered_one_is_refused(tmp_path):
    net = Network((8,), sees_all=False)
    path = save_selfplay(tmp_path / "m.npz", net.actor_layers(), {"frames": 5})
    policy, meta = read_selfplay(path)
    assert meta["frames"] == 5 and [w.shape for w, _, _ in policy.layers] == [(8, 456), (85, 8)]
    bad = dict(np.load(path))
    bad["w1"] = np.full((85, 8), np.nan, dtype=np.float32)
    np.savez(tmp_path / "bad.npz", **bad)
    with pytest.raises(ValueError, match="NaN"):
        read_selfplay(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="no such file"):
        make_agent(f"selfplay:{tmp_path / 'none.npz'}", 0)


@pytest.mark.parametrize(
    "flag, value, words",
    [("--pool-share", "1.5", "pool_share"), ("--hidden", "0", "hidden"), ("--precision", "half", "precision"),
     ("--eval-games", "7", "eval_games"), ("--pool", "nosuchbot@1", "nosuchbot"), ("--gamma", "0", "gamma"),
     ("--epochs", "0", "epochs")],
)  # fmt: skip
def test_a_bad_knob_is_refused_by_name(flag, value, words, tmp_path, capsys):
    assert train.main(tiny(tmp_path / "bad", flag, value)) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "bad" / "checkpoints").exists()


def test_config_json_names_every_knob(tmp_path):
    out = tmp_path / "cfg"
    assert train.main(tiny(out, "--total-frames", "200")) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["hidden"] == [16] and config["critic_sees_all"] is True
    assert (out / "final.npz").exists() and (out / "best.npz").exists()
    assert list((out / "tb").glob("events.out.tfevents.*")), "no TensorBoard events"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is here")
def test_a_gpu_asked_for_where_there_is_none_is_refused_in_one_line(tmp_path, capsys):
    assert train.main(tiny(tmp_path / "gpu", "--device", "cuda")) == 2
    err = capsys.readouterr().err
    assert "no CUDA device" in err and "Traceback" not in err


def test_the_loop_holds_numpy_s_blas_to_one_thread(tmp_path):
    """OpenBLAS's spinning threads beside torch's slowed the pool's numpy passes several-fold: a run sets one."""
    from conquian_train.learner import numpy_blas_threads

    before = numpy_blas_threads()
    if before is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS this process can reach")
    try:
        numpy_blas_threads(2)
        assert numpy_blas_threads() == min(2, os.cpu_count() or 2)
        SelfPlayRun(SelfPlayConfig(out=str(tmp_path / "run"), num_games=8, hidden=(8,), torch_threads=1))
        assert numpy_blas_threads() == 1
    finally:
        numpy_blas_threads(before)


def test_an_illegal_move_in_the_loop_is_refused_by_the_engine_naming_who_chose_it(tmp_path):
    """The engine refuses it before it changes the game (its message names the legal moves); the loop adds
    who chose it."""
    run = SelfPlayRun(SelfPlayConfig(out=str(tmp_path / "run"), num_games=8, hidden=(8,), torch_threads=1,
                                     overlap=False))  # fmt: skip
    run.start_segment()
    sample = run.learner.sample

    def wrong(data, rows):
        sample(data, rows)
        data.action[rows] = np.argmin(data.mask[rows], axis=1)  # an illegal action id in every row

    run.learner.sample = wrong
    with pytest.raises(AssertionError, match=r"game \d+: .*chosen by the learner"):
        run.collect()


def test_the_progress_line_says_the_time_left_and_nothing_once_the_total_is_passed():
    """The last rollout may pass ``--total-frames``: the line then says no time (it printed "about -0 min")."""
    assert time_left(-59_695, 86_881) == "" and time_left(0, 1000) == ""
    assert time_left(500_000, 100_000) == "; about 5 s to go"
    assert time_left(43_800_000, 95_000) == "; about 8 min to go"
