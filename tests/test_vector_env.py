"""The vector environments (Gymnasium VectorEnv, SB3 VecEnv) over the batched engine."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from conquian_env import kernels as K  # noqa: E402
from conquian_env.game import IllegalActionError  # noqa: E402
from conquian_env.observation import OBS_AT, action_mask, encode  # noqa: E402
from conquian_env.vector_env import ConquianVectorEnv  # noqa: E402
from conquian_env.wrappers import game_over_mask  # noqa: E402

PHASE = OBS_AT["phase"]


def _random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.argmax(masks * rng.random(masks.shape), axis=1)


def test_the_learner_sees_only_its_own_decisions_and_every_result():
    env = ConquianVectorEnv(48, opponent="random", seed=1)
    obs, info = env.reset()
    rng = np.random.default_rng(0)
    seats_seen = set()
    results = []
    for _ in range(300):
        masks = env.action_masks()
        assert masks.shape == (48, 85) and masks.any(axis=1).all()
        # the learner is to move in every game, and obs/masks are its own
        assert (obs[:, PHASE + 4] == 0).all() and (obs[:, PHASE + 5] == 0).all()
        for i in range(0, 48, 7):
            game = env.games.get_game(i)
            seat = int(info["seat"][i])
            assert game.player == seat
            assert np.array_equal(obs[i], encode(game, seat))
            assert np.array_equal(masks[i], action_mask(game, seat).astype(bool))
        seats_seen.update(info["seat"].tolist())
        obs, rewards, terminated, truncated, info = env.step(_random_legal(masks, rng))
        assert not truncated.any()
        assert (rewards[~terminated] == 0).all()
        if terminated.any():
            assert np.array_equal(info["_final_obs"], terminated)
            for i in np.flatnonzero(terminated):
                final = info["final_obs"][i]
                assert final[PHASE + 5] == 1  # the last observation shows the game over
                assert {"win": 1, "loss": -1, "draw": 0}[info["final_info"]["result"][i]] == rewards[i]
            results.extend(rewards[terminated].tolist())
    assert seats_seen == {0, 1}
    assert len(results) > 150 and set(results) <= {-1.0, 0.0, 1.0}
    assert abs(np.mean(results)) < 0.25  # random against random


def test_fixed_seat_and_same_seed_same_run():
    def run(seed):
        env = ConquianVectorEnv(16, opponent="random:seed=3", seat=1, seed=seed)
        obs, info = env.reset()
        assert (info["seat"] == 1).all()
        rng = np.random.default_rng(5)
        out = []
        for _ in range(100):
            obs, r, d, _, info = env.step(_random_legal(env.action_masks(), rng))
            out.append(obs.copy())
        return np.stack(out)

    assert np.array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


def test_illegal_learner_actions_lose_or_raise():
    env = ConquianVectorEnv(4, opponent="random", seed=2)
    env.reset()
    masks = env.action_masks()
    acts = np.argmax(masks, axis=1)
    acts[1] = 82  # finish: never legal for the learner's first decision (an offer)
    obs, rewards, terminated, _, info = env.step(acts)
    assert terminated[1] and rewards[1] == -1 and info["final_info"]["illegal_action"][1]
    assert info["final_info"]["_illegal_action"].tolist() == [False, True, False, False]
    strict = ConquianVectorEnv(4, opponent="random", seed=2, illegal_action="raise")
    strict.reset()
    before = strict.games.state.copy()
    with pytest.raises(IllegalActionError, match="game 1"):
        strict.step(acts)
    assert np.array_equal(strict.games.state, before)
    with pytest.raises(ValueError, match="integer action ids"):
        strict.step(np.zeros(4))
    with pytest.raises(ValueError, match="run from 0 to 84"):
        strict.step(np.full(4, 85))


def test_bad_opponents_and_options_are_named():
    with pytest.raises(ValueError, match="act_batch"):
        ConquianVectorEnv(2, opponent=object())
    with pytest.raises(ValueError, match="seat"):
        ConquianVectorEnv(2, seat=2)
    with pytest.raises(ValueError, match="observation"):
        ConquianVectorEnv(2, observation="pixels")

    class Cheater:
        def act_batch(self, games, rows):
            return np.full(len(rows), 82)  # finish: not legal in an offer

    env = ConquianVectorEnv(2, opponent=Cheater(), seat=1, seed=0)
    with pytest.raises(RuntimeError, match="opponent .* answered 82"):
        env.reset()


def test_per_game_opponents_play_the_same_games_as_batched_ones():
    from agents.base import BatchRandom
    from agents.batched import PerGameOpponent

    class Recorder:
        def __init__(self, inner):
            self.inner = inner
            self.calls = 0

        def act_batch(self, games, rows):
            self.calls += len(rows)
            return self.inner.act_batch(games, rows)

        def reset_rows(self, rows):
            if hasattr(self.inner, "reset_rows"):
                self.inner.reset_rows(rows)

    per_game = Recorder(PerGameOpponent("greedy"))
    env = ConquianVectorEnv(8, opponent=per_game, seed=4)
    env.reset()
    rng = np.random.default_rng(1)
    for _ in range(120):
        env.step(_random_legal(env.action_masks(), rng))
    assert per_game.calls > 300
    assert env.core.opponent_decisions == per_game.calls
    assert isinstance(BatchRandom().act_batch(env.games, np.arange(8)), np.ndarray)


def test_sb3_vec_env_trains_maskable_ppo():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from conquian_env.sb3 import ConquianVecEnv

    venv = VecMonitor(ConquianVecEnv(16, opponent="random", seed=0))
    model = MaskablePPO("MlpPolicy", venv, n_steps=32, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(1024)
    assert model.num_timesteps >= 1024
    obs = venv.reset()
    masks = np.stack(venv.env_method("action_masks"))
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[np.arange(16), actions].all()
    inner = venv.unwrapped
    assert inner.games.state[:, K.PHASE].max() < K.GAME_OVER


def test_play_batch_matches_the_one_game_loop_for_deterministic_bots():
    from agents import make_agent
    from agents.greedy.batched import BatchGreedy
    from conquian_arena.batch import play_batch
    from conquian_arena.match import deal_for_seed, play_game
    from conquian_env.vector import deal_permutation

    deals = [deal_for_seed(500 + d) for d in range(12)]
    perms = np.stack([deal_permutation(h, s) for h, s in deals for _ in (0, 1)])
    seats = np.tile([0, 1], len(deals))
    scores, moves = play_batch(BatchGreedy(), BatchGreedy(), perms, seats)
    for k, (hands, stock) in enumerate(d for d in deals for _ in (0, 1)):
        record = play_game([make_agent("greedy"), make_agent("greedy")], hands=hands, stock=stock)
        a_seat = seats[k]
        expected = 0.5 if record.winner is None else float(record.winner == a_seat)
        assert scores[k] == expected and moves[k] == record.moves
    with pytest.raises(ValueError, match="a_seats"):
        play_batch(BatchGreedy(), BatchGreedy(), perms, np.full(len(perms), 2))


def test_batch_pool_draws_members_by_weight_and_adds_snapshots():
    from agents.networks.ppo import DEFAULT_MODEL, load_policy
    from conquian_train.pool import BatchPool

    pool = BatchPool([("greedy", 3.0), ("random", 1.0), ("self", 2.0), ("past", 1.0)], seed=0, max_snapshots=2)
    env = ConquianVectorEnv(200, opponent=pool, seed=3)
    env.reset()
    assert set(pool.counts) == {"greedy", "random"}  # no snapshot yet: self and past wait
    assert 2.0 < pool.counts["greedy"] / pool.counts["random"] < 4.5
    policy = load_policy(DEFAULT_MODEL)
    for _ in range(5):  # snapshots rotate (two kept); retired members are forgotten
        pool.add_snapshot(policy)
        pool.reset_rows(np.arange(200))
    assert len(pool.snapshots) == 2
    assert {"self", "past"} <= set(pool.counts)
    assert len(pool._members) <= 2 * (len(pool.bots) + pool.max_snapshots) + 2
    rng = np.random.default_rng(0)
    for _ in range(30):  # every member answers legally for its games
        env.step(_random_legal(env.action_masks(), rng))
    assert env.core.opponent_decisions > 1000


def test_an_opponent_answering_minus_one_is_an_error_not_a_hang():
    from conquian_env.vector import VectorGame

    class Neg:
        def act_batch(self, games, rows):
            return np.full(len(rows), -1)

    with pytest.raises(RuntimeError, match=r"answered -1 in game \d+: action ids run from 0 to 84"):
        ConquianVectorEnv(2, opponent=Neg(), seed=0, seat=1).reset(seed=0)
    games = VectorGame(2, seed=0, illegal_action="penalize")
    with pytest.raises(ValueError, match=r"game 0: -1 is not an action id"):
        games.step(np.array([-1, 81]), where=np.array([True, True]))
    games.step(np.array([-1, 81]), where=np.array([False, True]))  # left out: fine


def _trajectory(env, steps=60):
    rng = np.random.default_rng(9)
    out = []
    for _ in range(steps):
        obs, *_ = env.step(_random_legal(env.action_masks(), rng))
        out.append(obs.copy())
    return np.stack(out)


@pytest.mark.parametrize("opponent", ["random", "random:seed=4", "ppo:deterministic=false", "pimc:iterations=3"])
def test_the_same_seed_gives_the_same_games(opponent):
    a = ConquianVectorEnv(6, opponent=opponent, seed=0)
    a.reset(seed=123)
    first = _trajectory(a, 25)
    a.reset(seed=123)  # the same instance again: deals, seats and the opponent's draws start afresh
    assert np.array_equal(_trajectory(a, 25), first)
    b = ConquianVectorEnv(6, opponent=opponent, seed=0)  # a fresh instance (as in another process)
    b.reset(seed=123)
    assert np.array_equal(_trajectory(b, 25), first)


def test_seeded_random_spec_stays_batched_and_alternate_first_restarts():
    from agents.base import BatchRandom
    from conquian_env.vector import VectorGame

    assert isinstance(ConquianVectorEnv(2, opponent="random:seed=1").core.opponent, BatchRandom)
    games = VectorGame(3, seed=0, first="alternate")
    before = games.players.copy()
    games.reset(seed=0)
    assert np.array_equal(games.players, before)


def test_vector_game_rejects_bad_indexes_and_draws_score_zero():
    from conquian_env.vector import VectorGame

    games = VectorGame(3, seed=0)
    for bad in (-1, 3, 1.5, True):
        with pytest.raises(ValueError, match="game index"):
            games.get_game(bad)
    with pytest.raises(ValueError, match="first"):
        VectorGame(2, first=1.0)
    assert games.random_actions(None, rows=[]).shape == (0,)
    games.redeal([])
    rng = np.random.default_rng(0)
    draws = 0
    big = VectorGame(64, seed=1)
    for _ in range(400):
        r = big.step(big.random_actions(rng))
        for i in np.flatnonzero(r.dones & (r.winners == -1)):
            draws += 1
            assert np.signbit(r.rewards[i]).sum() == 0  # +0.0 for both, not -0.0
    assert draws > 0


# A deal player 0 goes out on at once: with the top stock card (KH) their ten cards make
# AD AH AS, JH QH KH and 5S 6S 7S JS QS, eleven melded cards on the first offer.
GOING_OUT = (
    [
        ["AD", "AH", "AS", "JH", "QH", "5S", "6S", "7S", "JS", "QS"],
        ["2C", "3C", "KC", "2D", "5D", "QD", "KD", "2H", "3S", "KS"],
    ],
    "KH AC 4C 5C 6C 7C JC QC 3D 4D 6D 7D JD 3H 4H 5H 6H 7H 2S 4S".split(),
)


class StackedDeals(np.random.Generator):
    """A deal generator whose next permutations are the given ones (then shuffles as usual)."""

    def __init__(self, perms, seed=0):
        super().__init__(np.random.PCG64(seed))
        self.queue = [np.asarray(p, dtype=np.int64) for p in perms]

    def permuted(self, x, axis=None, out=None):
        shuffled = super().permuted(x, axis=axis, out=out)
        for k in range(min(len(self.queue), len(shuffled))):
            shuffled[k] = self.queue.pop(0)
        return shuffled


def _going_out_perm():
    from conquian_env.vector import deal_permutation

    return deal_permutation(*GOING_OUT)


def _learner_can_move_everywhere(env):
    state = env.games.state
    assert (state[:, K.PHASE] != K.GAME_OVER).all()
    assert (state[:, K.PLAYER] == env.core.seats).all()
    assert env.action_masks().any(axis=1).all()


def test_a_deal_that_ends_before_the_learners_first_move_is_dealt_anew_and_reported_after_a_step():
    env = ConquianVectorEnv(3, opponent="greedy", seat=1, seed=0)
    env.reset(seed=0)
    _learner_can_move_everywhere(env)
    # row 0's next two deals: the opponent (player 0, first to play) goes out at once
    env.games.rng = StackedDeals([_going_out_perm(), _going_out_perm()], seed=1)
    actions = np.argmax(env.action_masks(), axis=1)
    actions[0] = 82  # finish: illegal in an offer, so row 0's game ends (penalized) in this step
    obs, rewards, terminated, _, info = env.step(actions)
    final = info["final_info"]
    assert terminated.tolist() == [True, False, False] and rewards[0] == -1 and final["illegal_action"][0]
    assert final["result"][0] == "loss"  # the learner's episode: its own result, not the unplayed deals'
    assert info["final_obs"][0][PHASE + 5] == 1
    assert info["_unplayed_results"].tolist() == [True, False, False]
    assert info["unplayed_results"][0] == ["loss", "loss"] and info["unplayed_results"][1] is None
    assert env.core.unplayed_deals == 2
    _learner_can_move_everywhere(env)
    rng = np.random.default_rng(0)
    for _ in range(20):
        env.step(_random_legal(env.action_masks(), rng))
        _learner_can_move_everywhere(env)


def test_a_first_deal_that_ends_before_the_learner_moves_is_reported_by_reset():
    env = ConquianVectorEnv(2, opponent="greedy", seat=1, seed=0)
    env.games.rng = StackedDeals([np.arange(40), _going_out_perm()])  # row 1's first deal goes out at once
    obs, info = env.reset()
    assert info["_unplayed_results"].tolist() == [False, True] and info["unplayed_results"][1] == ["loss"]
    _learner_can_move_everywhere(env)


def test_sb3_vec_env_reports_deals_that_end_before_the_learner_moves():
    pytest.importorskip("stable_baselines3")
    from conquian_env.sb3 import ConquianVecEnv

    venv = ConquianVecEnv(2, opponent="greedy", seat=1, seed=0)
    # reset deals rows 0 and 1, then row 0 again (its first deal went out); the step row 0 again
    venv.core.games.rng = StackedDeals([_going_out_perm(), np.arange(40), np.arange(40), _going_out_perm()])
    venv.reset()
    assert venv.reset_infos[0]["unplayed_results"] == [-1] and "unplayed_results" not in venv.reset_infos[1]
    actions = np.argmax(venv.action_masks(), axis=1)
    actions[0] = 82
    obs, rewards, dones, infos = venv.step(actions)
    assert dones.tolist() == [True, False] and infos[0]["result"] == -1 and infos[0]["illegal_action"]
    assert infos[0]["unplayed_results"] == [-1] and "unplayed_results" not in infos[1]
    assert venv.action_masks().any(axis=1).all()


@pytest.mark.slow
def test_the_reported_long_run_no_longer_hands_a_finished_game_to_the_opponent():
    # issue 15: this run died after 514,048 learner steps (a finished game handed to greedy)
    env = ConquianVectorEnv(256, opponent="greedy", seed=1)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    episodes = unplayed = 0
    for _ in range(2100):
        _, _, terminated, _, info = env.step(_random_legal(env.action_masks(), rng))
        episodes += int(terminated.sum())
        if "unplayed_results" in info:
            unplayed += sum(len(r) for r in info["unplayed_results"][info["_unplayed_results"]])
    assert unplayed >= 1 and unplayed == env.core.unplayed_deals
    assert episodes > 5000


def test_seeds_and_actions_are_checked_with_messages_that_name_them():
    env = ConquianVectorEnv(2, seed=0)
    env.reset()
    for bad in (True, -1, 2.0):
        with pytest.raises(ValueError, match=f"seed must be an integer >= 0 or None, got {bad!r}"):
            env.reset(seed=bad)
        with pytest.raises(ValueError, match="seed must be an integer >= 0 or None"):
            ConquianVectorEnv(2, seed=bad)
    with pytest.raises(ValueError, match="got 18446744073709551615 in game 0"):
        env.step(np.array([2**64 - 1, 81], dtype=np.uint64))


def test_sb3_vec_env_names_the_shape_of_bad_actions():
    pytest.importorskip("stable_baselines3")
    from conquian_env.sb3 import ConquianVecEnv

    venv = ConquianVecEnv(2, seed=0)
    venv.reset()
    with pytest.raises(ValueError, match=r"shape \(2,\) or \(2, 1\).*got shape \(3,\)"):
        venv.step(np.array([81, 81, 81]))
    venv.step(np.array([[81], [81]]))  # SB3's own (n, 1) shape is fine


def test_an_opponent_seed_in_the_spec_is_kept_over_the_environments():
    def first_moves(spec, seed):
        env = ConquianVectorEnv(32, opponent=spec, seat=1, seed=0)
        obs, _ = env.reset(seed=seed)
        return obs.copy()

    # the opponent (player 0) moved before the learner's first decision: its moves show in obs
    assert np.array_equal(first_moves("random:seed=5", 11), first_moves("random:seed=5", 11))
    assert not np.array_equal(first_moves("random:seed=5", 11), first_moves("random:seed=6", 11))
    assert not np.array_equal(first_moves("random", 11), first_moves("random:seed=5", 11))


# ------------------------------------------------------------------ Gymnasium's vector conventions
# ConquianVectorEnv is checked against gymnasium's own SyncVectorEnv over the single-agent env
# in the same (same-step) autoreset mode: the same keys, dtypes, shapes and `_key` masks in
# every info, and where the two play the same deals (one stacked deal, always, with the
# deterministic greedy opponent and a fixed seat), the same values.


def _layout(infos):
    """An info dict's structure: for every key its type, dtype and shape (nested dicts too)."""
    return {
        k: _layout(v) if isinstance(v, dict) else (type(v).__name__, np.asarray(v).dtype, np.shape(v))
        for k, v in infos.items()
    }


def _assert_same(ours, theirs, where=""):
    """The same structure and the same values (object arrays element by element)."""
    assert _layout(ours) == _layout(theirs), where
    for k, v in theirs.items():
        if isinstance(v, dict):
            _assert_same(ours[k], v, f"{where}{k}.")
        elif v.dtype == object:
            for i, (a, b) in enumerate(zip(ours[k], v, strict=True)):
                same = (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
                assert same, f"{where}{k}[{i}]: {a!r} != {b!r}"
        else:
            assert np.array_equal(ours[k], v), f"{where}{k}: {ours[k]!r} != {v!r}"


class _SameDeal(np.random.Generator):
    """A deal generator for the batched engine that deals one permutation every time."""

    def __init__(self, perm):
        super().__init__(np.random.PCG64(0))
        self.perm = np.asarray(perm, dtype=np.int64)

    def permuted(self, x, axis=None, out=None):
        return np.tile(self.perm, (len(x), 1))


def _same_deal_pair(n, seat, deal, wrap=None):
    """ConquianVectorEnv and SyncVectorEnv(SingleAgentEnv) (same-step autoreset) that deal ``deal``
    in every game, again and again."""
    import gymnasium

    from conquian_env.vector import deal_permutation
    from conquian_env.wrappers import SingleAgentEnv

    class AlwaysDeal(gymnasium.Wrapper):
        def reset(self, *, seed=None, options=None):
            return self.env.reset(seed=seed, options={"hands": deal[0], "stock": deal[1]})

    ours = ConquianVectorEnv(n, opponent="greedy", seat=seat, seed=0)
    ours.games.rng = _SameDeal(deal_permutation(*deal))
    theirs = gymnasium.vector.SyncVectorEnv(
        [lambda: AlwaysDeal(SingleAgentEnv(opponent="greedy", seat=seat))] * n,
        autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP,
    )
    if wrap is not None:
        ours, theirs = wrap(ours), wrap(theirs)
    return ours, theirs


@pytest.mark.filterwarnings("ignore::conquian_env.game.IllegalActionWarning")  # the single-agent env's
@pytest.mark.parametrize("seat", [0, 1])
def test_infos_final_info_and_masks_are_those_of_gymnasiums_sync_vector_env(seat):
    import gymnasium
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    from conquian_arena.match import deal_for_seed

    deal = deal_for_seed(500 + seat)
    n = 3
    ours, theirs = _same_deal_pair(n, seat, deal, wrap=RecordEpisodeStatistics)
    assert (
        ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    )
    options = {"hands": deal[0], "stock": deal[1]}
    obs, info = ours.reset(options=options)
    obs_t, info_t = theirs.reset(seed=0, options=options)
    assert np.array_equal(obs, obs_t)
    _assert_same(info, info_t, "reset: ")
    assert set(info) == {"action_mask", "_action_mask", "seat", "_seat"}
    rng = np.random.default_rng(seat)
    ends = illegal = partial = natural = 0
    results = set()
    for t in range(80):
        # the masks through the wrapper: in infos, and by call() on the env beneath (as for SyncVectorEnv)
        masks = np.stack(ours.unwrapped.call("action_masks"))
        assert masks.dtype == bool and np.array_equal(masks, np.stack(theirs.unwrapped.call("action_masks")))
        assert np.array_equal(masks, info["action_mask"].astype(bool))
        assert np.array_equal(masks, ours.unwrapped.action_masks())
        assert ours.unwrapped.get_attr("seat") == theirs.unwrapped.get_attr("seat") == (seat,) * n
        actions = np.argmax(masks * rng.random(masks.shape), axis=1)
        if t % 9 == 4:  # now and then one game gets an illegal action (it loses that game)
            actions[t % n] = np.flatnonzero(~masks[t % n])[0]
        obs, rewards, terminated, truncated, info = ours.step(actions)
        obs_t, rewards_t, terminated_t, truncated_t, info_t = theirs.step(actions)
        for a, b in ((obs, obs_t), (rewards, rewards_t), (terminated, terminated_t), (truncated, truncated_t)):
            assert a.dtype == b.dtype and np.array_equal(a, b), f"step {t}"
        # the episode statistics RecordEpisodeStatistics adds (times aside) agree too
        if "episode" in info_t:
            episode, episode_t = info.pop("episode"), info_t.pop("episode")
            for k in ("r", "l"):
                assert np.array_equal(episode[k], episode_t[k])
        _assert_same(info, info_t, f"step {t}: ")
        if terminated.any():
            ends += 1
            partial += not terminated.all()
            final = info["final_info"]
            assert np.array_equal(info["_final_info"], terminated) and np.array_equal(info["_final_obs"], terminated)
            assert np.array_equal(final["_result"], terminated) and np.array_equal(
                final["seat"][terminated], [seat] * terminated.sum()
            )
            # a finished game's mask offers GAME_OVER_ACTION alone (the action next-step autoreset ignores)
            assert (final["action_mask"][terminated] == game_over_mask()).all()
            assert not final["action_mask"][~terminated].any()
            flagged = final.get("illegal_action", np.zeros(n, bool))
            illegal += int(flagged.sum())
            natural += int((terminated & ~flagged).sum())
            results.update(final["result"][terminated])
        else:
            assert "final_info" not in info and "final_obs" not in info
    assert ends >= 5 and partial >= 1 and illegal >= 3 and natural >= 2 and results <= {"win", "loss", "draw"}


def test_a_deal_that_ends_before_the_learner_moves_is_reported_as_the_sync_vector_env_reports_it():
    import gymnasium

    from conquian_env.wrappers import SingleAgentEnv

    n = 2
    options = {"hands": GOING_OUT[0], "stock": GOING_OUT[1]}  # the opponent (player 0) goes out at once
    ours = ConquianVectorEnv(n, opponent="greedy", seat=1, seed=0)
    theirs = gymnasium.vector.SyncVectorEnv(
        [lambda: SingleAgentEnv(opponent="greedy", seat=1)] * n,
        autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP,
    )
    _, info = ours.reset(options=options)
    _, info_t = theirs.reset(seed=0, options=options)
    assert _layout(info) == _layout(info_t)  # the next deals are shuffles of each engine: values differ
    for infos in (info, info_t):
        assert infos["unplayed_results"].tolist() == [["loss"], ["loss"]] and infos["_unplayed_results"].all()
    for env in (ours, theirs):
        assert np.stack(env.call("action_masks")).any(axis=1).all()  # the learner has a move in every game


def test_make_vec_builds_the_batched_env_through_the_vector_entry_point():
    import gymnasium

    from conquian_env import GYM_ENV_ID

    envs = gymnasium.make_vec(
        GYM_ENV_ID, num_envs=3, vectorization_mode="vector_entry_point", opponent="greedy", seat=0, seed=5
    )
    assert isinstance(envs, ConquianVectorEnv) and envs.num_envs == 3 and envs.spec.id == GYM_ENV_ID
    assert envs.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert envs.single_action_space == gymnasium.spaces.Discrete(85)
    direct = ConquianVectorEnv(3, opponent="greedy", seat=0, seed=5)
    assert np.array_equal(envs.reset(seed=1)[0], direct.reset(seed=1)[0])
    assert np.array_equal(_trajectory(envs, 20), _trajectory(direct, 20))  # the same games
    # the vector entry point is gymnasium's default; "sync" vectorizes the single-agent env instead
    assert isinstance(gymnasium.make_vec(GYM_ENV_ID, num_envs=2), ConquianVectorEnv)
    sync = gymnasium.make_vec(
        GYM_ENV_ID,
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP},
        opponent="greedy",
        seat=0,
    )
    assert isinstance(sync, gymnasium.vector.SyncVectorEnv)
    assert _layout(sync.reset(seed=1)[1]) == _layout(envs.reset(seed=1)[1])
    with pytest.raises(ValueError, match="does not render.*vectorization_mode='sync'"):
        gymnasium.make_vec(GYM_ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", render_mode="ansi")
    with pytest.raises(ValueError, match="SAME_STEP.*got <AutoresetMode.NEXT_STEP"):
        gymnasium.make_vec(GYM_ENV_ID, num_envs=2, autoreset_mode=gymnasium.vector.AutoresetMode.NEXT_STEP)
    with pytest.raises(ValueError, match="num_envs must be a positive integer, got 0"):
        gymnasium.make_vec(GYM_ENV_ID, num_envs=0)


def test_make_vec_without_numba_says_what_to_install(monkeypatch):
    import sys

    import gymnasium

    import conquian_env
    from conquian_env import GYM_ENV_ID

    for name in ("vector_env", "vector", "kernels", "_kernels"):  # as if never imported
        monkeypatch.delitem(sys.modules, f"conquian_env.{name}", raising=False)
        monkeypatch.delattr(conquian_env, name, raising=False)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba now fails
    with pytest.raises(ImportError, match=r"needs numba, the 'fast' extra: pip install 'conquian-env\[fast\]'.*'sync'"):
        gymnasium.make_vec(GYM_ENV_ID, num_envs=2)
    assert isinstance(
        gymnasium.make_vec(GYM_ENV_ID, num_envs=2, vectorization_mode="sync"), gymnasium.vector.SyncVectorEnv
    )


def test_call_get_attr_and_set_attr_answer_per_game_as_sync_vector_env_does():
    import gymnasium

    from agents.base import BatchRandom
    from conquian_env.game import GameState
    from conquian_env.wrappers import SingleAgentEnv

    n = 3
    ours = ConquianVectorEnv(n, opponent="greedy", seat=1, seed=0)
    theirs = gymnasium.vector.SyncVectorEnv([lambda: SingleAgentEnv(opponent="greedy", seat=1)] * n)
    ours.reset(seed=0)
    theirs.reset(seed=0)
    shared = ("fixed_seat", "rules", "illegal_action", "render_mode", "observation_space", "action_space")
    for name in ("seat", *shared):
        assert ours.get_attr(name) == theirs.get_attr(name) == ours.call(name), name
    games = ours.call("game")
    assert len(games) == n and all(isinstance(g, GameState) and g.player == 1 for g in games)
    masks = ours.call("action_masks")
    assert len(masks) == n and all(m.shape == (85,) and m.dtype == bool for m in masks)
    assert [type(m) for m in masks] == [type(m) for m in theirs.call("action_masks")]
    assert ours.call("set_opponent", "random") == (None,) * n
    assert isinstance(ours.core.opponent, BatchRandom) and ours.get_attr("opponent") == (ours.core.opponent,) * n
    bot = BatchRandom(seed=1)
    ours.set_attr("opponent", bot)
    assert ours.core.opponent is bot
    ours.set_attr("opponent", [bot] * n)
    assert ours.core.opponent is bot
    with pytest.raises(ValueError, match="one opponent serves every game"):
        ours.set_attr("opponent", [bot, BatchRandom(seed=2), bot])
    with pytest.raises(ValueError, match="list or tuple of 3 .* got 2 values"):
        ours.set_attr("opponent", [bot, bot])
    with pytest.raises(AttributeError, match="can set only 'opponent'.*got 'seat'"):
        ours.set_attr("seat", 0)
    with pytest.raises(AttributeError, match="no per-game attribute 'np_random'.*'action_masks'"):
        ours.call("np_random")
    with pytest.raises(TypeError, match="'seat' is an attribute, not a method"):
        ours.call("seat", 1)
    with pytest.raises(TypeError):
        ours.call("action_masks", 1)


def test_reset_options_stack_a_deal_in_every_game_and_bad_ones_are_named():
    from conquian_env import new_game
    from conquian_env.observation import encode

    env = ConquianVectorEnv(2, opponent="greedy", seat=0, seed=0)
    obs, _ = env.reset(options={"hands": GOING_OUT[0], "stock": GOING_OUT[1]})
    assert np.array_equal(obs, np.stack([encode(new_game(hands=GOING_OUT[0], stock=GOING_OUT[1]), 0)] * 2))
    before = env.games.state.copy()
    with pytest.raises(ValueError, match=r"takes the options \['hands', 'stock'\], got \['reset_mask'\]"):
        env.reset(options={"reset_mask": np.ones(2, bool)})
    with pytest.raises(ValueError, match="needs both 'hands' and 'stock'"):
        env.reset(options={"hands": GOING_OUT[0]})
    with pytest.raises(ValueError, match="options must be a dict"):
        env.reset(options=["hands"])
    with pytest.raises(ValueError, match="2 hands"):
        env.reset(seed=3, options={"hands": GOING_OUT[0][:1], "stock": GOING_OUT[1]})
    assert np.array_equal(env.games.state, before)  # a bad deal changes nothing


def test_make_vec_sync_refuses_a_constructor_seed_and_says_how_to_seed():
    # before: make_vec(..., seed=0, vectorization_mode="sync") died in SingleAgentEnv.__init__ with a bare
    # TypeError ("unexpected keyword argument 'seed'") though docs/batched.md showed seed=
    import gymnasium

    from conquian_env import GYM_ENV_ID

    for mode in ("sync", "async"):
        with pytest.raises(TypeError, match=r"no seed= argument.*envs.reset\(seed=S\) seeds sub-env i with S \+ i"):
            gymnasium.make_vec(GYM_ENV_ID, 4, opponent="greedy", seed=0, vectorization_mode=mode)
    with pytest.raises(TypeError, match=r"takes no seed= argument.*env.reset\(seed=S\)"):
        gymnasium.make(GYM_ENV_ID, opponent="greedy", seed=0)
    # the documented way: the batched default takes seed=; sync is seeded through reset, distinctly
    # per sub-env (S + i) and the same for the same seed
    assert isinstance(gymnasium.make_vec(GYM_ENV_ID, 4, opponent="greedy", seed=0), ConquianVectorEnv)

    def first_obs(seed):
        envs = gymnasium.make_vec(GYM_ENV_ID, 4, opponent="greedy", vectorization_mode="sync")
        obs, _ = envs.reset(seed=seed)
        envs.close()
        return obs

    obs = first_obs(0)
    assert np.array_equal(obs, first_obs(0))
    assert len({row.tobytes() for row in obs}) == 4  # four different deals
    single = gymnasium.make(GYM_ENV_ID, opponent="greedy")
    assert np.array_equal(single.reset(seed=2)[0], obs[2])  # sub-env 2 got seed 0 + 2
