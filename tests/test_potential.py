"""The ``"potential"`` observation (conquian_env.potential): its planes on hand-built hands, the compiled
kernel equal to the Python encoder on random positions, nothing hidden read, the docstring's table
equal to the layout, and a policy reading it in the arena, batched and per game, alike."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

pytest.importorskip("numba")

from conquian_env import kernels as K  # noqa: E402
from conquian_env import potential  # noqa: E402
from conquian_env.cards import cards_str, mask_of  # noqa: E402
from conquian_env.layout import OBSERVATION, POTENTIAL  # noqa: E402
from conquian_env.model_layouts import FEATURE_SETS  # noqa: E402
from conquian_env.potential import (  # noqa: E402
    PLANES,
    POTENTIAL_OBSERVATION,
    POTENTIAL_SIZE,
    encode_potential,
    potential_masks,
    potential_rows,
)
from conquian_env.vector import VectorGame  # noqa: E402
from conquian_env.view import PlayerView  # noqa: E402

FULL = (1 << 40) - 1


def planes(hand: str, meld: str = "", opp: str = "", unseen_too: str = "") -> dict[str, str]:
    h, m, o = mask_of(hand), mask_of(meld), mask_of(opp)
    live = FULL & ~h & ~m & ~o & ~mask_of(unseen_too)
    return {n: cards_str(x) for n, x in zip(PLANES, potential_masks(h, m, o, live), strict=True) if n != "live"}


def test_the_planes_of_hand_built_hands():
    got = planes("5C 5D 5H 2S 3S KC 7D", opp="JH QH KH")
    assert got["hand_complete"] == "5C 5D 5H"  # a set of three held
    assert got["hand_partial"] == "7D 2S 3S"  # 7D with 5D held and 6D live; the runs of spades
    assert got["combines_complete"] == "6D AS 4S 5S"  # 5D 6D 7D, A-2-3 and 2-3-4 of spades, a fourth five
    assert got["fits_opponent_meld"] == "7H" and got["fits_own_meld"] == ""  # 7 J Q K of hearts: a run
    assert got["winning_cards"] == ""  # the king of clubs stays unmatched whatever one card comes
    got = planes("5C 5D 5H 2S 3S", meld="JC QC KC")
    assert got["fits_own_meld"] == "7C" and got["winning_cards"] == "AS 4S"
    assert got["hand_partial"] == "2S 3S"
    # a partner that is gone (seen by the player, not live) leaves no partial: 2S 3S with AS and 4S dead
    assert planes("5C 5D 5H 2S 3S", unseen_too="AS 4S")["hand_partial"] == ""


def test_the_docstring_table_is_the_layout():
    rows = re.findall(r"^``(\w+)``\s", potential.__doc__, flags=re.M)
    assert tuple(rows) == PLANES == tuple(p.name for p in POTENTIAL.pieces[len(OBSERVATION.pieces) :])
    assert POTENTIAL_SIZE == OBSERVATION.size + 17 * 40 == FEATURE_SETS["potential"].size


def random_positions(count: int, seed: int) -> VectorGame:
    games = VectorGame(count, seed=seed, first="alternate")
    rng = np.random.default_rng(seed)
    for _ in range(int(rng.integers(0, 40))):
        games.step(games.random_actions(rng))
    return games


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kernel_equals_the_python_encoder_for_both_players(seed):
    games = random_positions(96, seed)
    rows = np.arange(96)
    for who in (games.state[:, K.PLAYER].astype(np.int64), 1 - games.state[:, K.PLAYER].astype(np.int64)):
        batch = POTENTIAL_OBSERVATION(games, rows, who)
        assert batch.shape == (96, POTENTIAL_SIZE) and batch.dtype == np.int8
        for k in rows:
            one = encode_potential(PlayerView(games.get_game(int(k)), int(who[k])))
            assert np.array_equal(batch[k], one), (seed, k, who[k])
    assert batch[:, OBSERVATION.size :].any(), "no plane was ever set"


def test_nothing_the_player_cannot_see_changes_the_planes():
    """The permutation check: the opponent's hidden cards and the stock dealt again, the vector the same."""
    games = random_positions(64, 7)
    rng = random.Random(0)
    changed = 0
    for k in range(64):
        state = games.get_game(k)
        for p in (0, 1):
            other = state.determinize(p, rng)
            changed += other.hands[1 - p] != state.hands[1 - p]
            assert np.array_equal(encode_potential(PlayerView(other, p)), encode_potential(PlayerView(state, p)))
    assert changed > 32


def test_the_kernel_writes_the_last_columns_and_refuses_a_wrong_buffer():
    games = random_positions(8, 4)
    rows, who = np.arange(8), games.state[:, K.PLAYER].astype(np.int64)
    out = np.full((8, POTENTIAL_SIZE), 7, dtype=np.int8)
    potential_rows(games.state, rows, who, out)
    assert (out[:, : OBSERVATION.size] == 7).all() and set(np.unique(out[:, OBSERVATION.size :])) <= {0, 1}
    with pytest.raises(ValueError, match="int8"):
        potential_rows(games.state, rows, who, np.zeros((8, POTENTIAL_SIZE), dtype=np.float32))
    with pytest.raises(ValueError, match="one player per row"):
        potential_rows(games.state, rows, who[:3], np.zeros((8, POTENTIAL_SIZE), dtype=np.int8))


def test_the_vector_env_gives_it_by_name():
    from conquian_env.vector_env import ConquianVectorEnv

    env = ConquianVectorEnv(4, observation="potential", seed=3)
    obs, _ = env.reset(seed=3)
    assert env.single_observation_space.shape == (POTENTIAL_SIZE,)
    assert obs.shape == (4, POTENTIAL_SIZE) and obs.dtype == np.int8
    with pytest.raises(ValueError, match="potential"):
        ConquianVectorEnv(4, observation="nonsense")


def test_a_policy_reading_it_plays_the_same_moves_batched_and_per_game(tmp_path):
    """A self-play model file on the "potential" set: saved, read back with its stamp, and its batched form
    and its per-game form choose the same move in every position."""
    pytest.importorskip("torch")
    from agents.networks.batched import BatchPolicy
    from agents.networks.ppo import PolicyAgent
    from agents.networks.selfplay import read_selfplay, save_selfplay
    from conquian_train.learner import Network

    net = Network((16,), sees_all=False, inputs=POTENTIAL_SIZE)
    path = save_selfplay(tmp_path / "p.npz", net.actor_layers(), {"frames": 1}, features="potential")
    policy, meta = read_selfplay(path)
    assert policy.features == "potential" and meta["feature_set"] == "potential"
    games = random_positions(48, 9)
    rows = np.flatnonzero(games.masks.sum(1) > 1)
    batched = BatchPolicy(policy).act_batch(games, rows)
    agent = PolicyAgent(policy)
    for k, a in zip(rows, batched, strict=True):
        state = games.get_game(int(k))
        view = PlayerView(state, state.player)
        assert agent.act(view.observation(), games.masks[k], view) == a
    with pytest.raises(ValueError, match="reads one of"):
        save_selfplay(tmp_path / "m.npz", net.actor_layers(), {}, features="meld")
    with pytest.raises(ValueError, match="inputs"):
        save_selfplay(tmp_path / "m.npz", net.actor_layers(), {}, features="raw")
