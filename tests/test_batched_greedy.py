"""The compiled greedy bot and "meld" features (agents.greedy.greedy_kernels) against the Python
ones (agents.greedy.greedy.GreedyAgent, agents.scorer.features.FeatureEncoder), decision by decision.

Games are played through the batched engine (greedy against greedy, greedy against
random, random against random, under every rule variant); at every decision
the kernel's greedy action is compared with a GreedyAgent per seat that is fed the real
game (so its lay-down plan is the real one), and the kernel's feature rows with
FeatureEncoder for the player to move and for the other player.  Finished positions
(game over) are put back with ``set_game`` and compared too.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("numba")

from agents.base import PlayerView  # noqa: E402
from agents.greedy import greedy  # noqa: E402
from agents.greedy import greedy_kernels as GK  # noqa: E402
from agents.greedy.greedy import GreedyAgent, plan_take  # noqa: E402
from agents.scorer.features import FEATURE_SIZE, FeatureEncoder  # noqa: E402
from conquian_env import kernels as K  # noqa: E402
from conquian_env.game import GAME_OVER, MELD, GameState  # noqa: E402
from conquian_env.melds import playable_cards  # noqa: E402
from conquian_env.rules import Rules  # noqa: E402
from conquian_env.vector import VectorGame  # noqa: E402
from tests.conftest import RULE_CASES  # noqa: E402


def _take_plan(state: GameState) -> int:
    """The lay-down plan GreedyAgent makes when it takes the face-up card (nothing chosen)."""
    p = state.player
    live = state.unseen_cards(p)
    return plan_take(
        state.hands[p], state.melds[p], state.face_up, 0, live, state.melds[1 - p], state.hands[1 - p].bit_count()
    )[0]


def _reference_agent(state: GameState) -> GreedyAgent:
    """A GreedyAgent holding the plan the kernel recomputes: the take plan in the meld phase.

    That is the real agent's plan whenever the meld so far followed it (always when the
    agent made the meld); a random player's meld can leave it, and then the real agent
    keeps its first re-plan while the stateless kernel re-plans from the cards chosen.
    """
    agent = GreedyAgent()
    if state.phase == MELD:
        agent._plan = (state.face_up, state.melds[state.player], _take_plan(state))
    return agent


def _expected_features(state: GameState, player: int) -> np.ndarray:
    encoder = FeatureEncoder()
    if player == state.current_player:
        encoder._greedy = _reference_agent(state)
    return encoder.encode(PlayerView(state, player))


def _play(n: int, steps: int, kinds: tuple[str, str], rules: Rules, seed: int, over: list[GameState]) -> dict:
    """Play ``steps`` decisions in ``n`` games and compare every decision; returns counts."""
    games = VectorGame(n, seed=seed, rules=rules, first="alternate")
    rng = np.random.default_rng(seed)
    seats = [[GreedyAgent(), GreedyAgent()] for _ in range(n)]
    counts = {"decisions": 0, "games": 0, "left_plan": 0}
    keep_over = len(over) + 15  # finished positions kept from these games
    for _ in range(steps):
        movers = games.state[:, K.PLAYER].copy()
        kernel_actions = GK.greedy_actions(games)
        mover_rows = GK.batch_features(games)
        other_rows = GK.batch_features(games, players=1 - movers)
        random_actions = games.random_actions(rng)
        actions = np.empty(n, dtype=np.int64)
        for i in range(n):
            state = games.get_game(i)
            p = state.player
            assert p == movers[i]
            agent_action = seats[i][p].choose(PlayerView(state, p))
            left_plan = kinds[p] == "random" and state.phase == MELD and state.chosen & ~_take_plan(state)
            if left_plan:
                counts["left_plan"] += 1
                expected = _reference_agent(state).choose(PlayerView(state, p))
            else:
                expected = agent_action
            assert kernel_actions[i] == expected, (i, state.to_dict())
            assert np.array_equal(mover_rows[i], _expected_features(state, p)), (i, p, state.to_dict())
            assert np.array_equal(other_rows[i], _expected_features(state, 1 - p)), (i, 1 - p, state.to_dict())
            actions[i] = agent_action if kinds[p] == "greedy" else random_actions[i]
            if len(over) < keep_over:
                after = games.get_game(i)
                after.apply(int(actions[i]))
                if after.is_terminal():
                    over.append(after)
            counts["decisions"] += 1
        result = games.step(actions)
        for i in np.flatnonzero(result.dones):
            seats[i] = [GreedyAgent(), GreedyAgent()]  # a new deal: a fresh bot per seat
            counts["games"] += 1
    return counts


@pytest.mark.parametrize("rules", RULE_CASES, ids=str)
def test_greedy_actions_and_features_equal_python_in_real_games(rules):
    over: list[GameState] = []
    total = {"decisions": 0, "games": 0, "left_plan": 0}
    for k, kinds in enumerate([("greedy", "greedy"), ("greedy", "random"), ("random", "random")]):
        counts = _play(40, 100, kinds, rules, seed=100 + 10 * k + rules.flags, over=over)
        for key in total:
            total[key] += counts[key]
    assert total["decisions"] == 3 * 40 * 100
    assert total["games"] >= 120

    # finished games (step deals anew at once, so they are put back with set_game)
    assert len(over) == 45
    games = VectorGame(len(over), seed=0, rules=rules)
    for i, state in enumerate(over):
        games.set_game(i, state)
    assert (games.state[:, K.PHASE] == GAME_OVER).all()
    assert (GK.greedy_actions(games) == -1).all()
    for player in (0, 1):
        rows = GK.batch_features(games, players=np.full(len(over), player))
        for i, state in enumerate(over):
            assert np.array_equal(rows[i], FeatureEncoder().encode(PlayerView(state, player))), (i, player)
    movers = GK.batch_features(games)  # default players: column 14, the last to move
    for i, state in enumerate(over):
        assert np.array_equal(movers[i], FeatureEncoder().encode(PlayerView(state, state.player)))


def test_parallel_kernels_equal_serial_ones():
    games = VectorGame(300, seed=7, forcing=True)
    rng = np.random.default_rng(7)
    for _ in range(25):
        games.step(games.random_actions(rng))
    S = games.state
    rows = np.arange(300, dtype=np.int64)[::-1].copy()
    players = (rows * 7 % 3 == 0).astype(np.int64)
    a_serial = np.empty(300, dtype=np.int64)
    a_parallel = np.empty(300, dtype=np.int64)
    GK.greedy_actions_serial(S, rows, a_serial)
    GK.greedy_actions_parallel(S, rows, a_parallel)
    assert np.array_equal(a_serial, a_parallel)
    f_serial = np.empty((300, FEATURE_SIZE), dtype=np.float32)
    f_parallel = np.empty((300, FEATURE_SIZE), dtype=np.float32)
    GK.features_serial(S, rows, players, f_serial)
    GK.features_parallel(S, rows, players, f_parallel)
    assert np.array_equal(f_serial, f_parallel)
    # the Python API (parallel from 256 rows) and a sample against the Python bot
    assert np.array_equal(GK.greedy_actions(games, rows), a_serial)
    assert np.array_equal(GK.batch_features(games, rows, players), f_serial)
    for k in range(0, 300, 15):
        state = games.get_game(int(rows[k]))
        assert a_serial[k] == _reference_agent(state).choose(PlayerView(state, state.player))
        assert np.array_equal(f_serial[k], _expected_features(state, int(players[k])))
    assert GK.greedy_actions(games, []).shape == (0,)
    assert GK.batch_features(games, []).shape == (0, FEATURE_SIZE)


def test_api_rejects_bad_rows_and_players():
    games = VectorGame(4, seed=1)
    with pytest.raises(ValueError):
        GK.greedy_actions(games, [0, 4])
    with pytest.raises(ValueError):
        GK.greedy_actions(games, [-1])
    with pytest.raises(ValueError):
        GK.batch_features(games, [0, 1], players=[0, 2])
    with pytest.raises(ValueError):
        GK.batch_features(games, [0, 1], players=[0])
    with pytest.raises(ValueError):
        GK.greedy_actions(np.zeros((2, 5), dtype=np.int64))


def _pool(rng: random.Random) -> tuple[int, int, int, int, int, int]:
    """Random positions, many of them with several hand cards fitting one card."""
    cards = list(range(40))
    rng.shuffle(cards)
    if rng.random() < 0.5:  # crowd the hand around the card: same rank or same suit nearby
        card = cards.pop()
        near = [c for c in cards if c % 10 == card % 10 or (c // 10 == card // 10 and abs(c - card) <= 4)]
        rng.shuffle(near)
        hand_cards = near[: rng.randint(4, 10)]
        others = [c for c in cards if c not in hand_cards]
        hand_cards += others[: rng.randint(0, 3)]
        cards = [c for c in others if c not in hand_cards]
    else:
        card = cards.pop()
        hand_cards, cards = cards[: rng.randint(1, 10)], cards[10:]
    hand = sum(1 << c for c in hand_cards)
    meld = sum(1 << c for c in cards[: rng.choice([0, 0, 3, 4, 6])])
    opp_meld = sum(1 << c for c in cards[6 : 6 + rng.choice([0, 3, 4])])
    live = sum(1 << c for c in cards[10:] if rng.random() < 0.7)
    return card, hand, meld, opp_meld, live, rng.randint(0, 10)


def test_evaluation_kernels_equal_python():
    rng = random.Random(5)
    many = 0
    for _ in range(3000):
        card, hand, meld, opp_meld, live, opp_size = _pool(rng)
        fitting = playable_cards(meld | 1 << card, hand)
        many += fitting.bit_count() > greedy.MAX_FULL_ENUM
        assert GK.position_value(hand, meld, live) == greedy.position_value(hand, meld, live)
        assert GK.choose_discard(hand, meld, live, opp_meld, opp_size) == greedy.choose_discard(
            hand, meld, live, opp_meld, opp_size
        )
        assert GK.plan_take(hand, meld, card, 0, live, opp_meld, opp_size) == greedy._plan_take(
            hand, meld, card, 0, live, opp_meld, opp_size
        )
        chosen = fitting & -fitting  # the lowest hand card that fits, already laid
        assert GK.plan_take(hand, meld, card, chosen, live, opp_meld, opp_size) == greedy._plan_take(
            hand, meld, card, chosen, live, opp_meld, opp_size
        )
        passes = bool(rng.getrandbits(1))
        margin = greedy.take_margin(hand, meld, card, live, opp_meld, opp_size, passes)[0]
        assert GK.take_margin(hand, meld, card, live, opp_meld, opp_size, passes) == margin
    assert many >= 20  # the "more than MAX_FULL_ENUM playable cards" branch of plan_take


def test_compiled_tables_are_the_python_ones():
    for baked, expected in zip(GK._baked(), GK._expected(), strict=True):
        assert np.array_equal(baked, expected)
    assert GK.PARTNER_COUNT.tolist() == [len(p) for p in greedy.PARTNERS]
    for c, pairs in enumerate(greedy.PARTNERS):
        assert GK.PARTNERS[c, : len(pairs)].tolist() == list(pairs)
    assert GK.NEIGHBOURS.tolist() == list(greedy.NEIGHBOURS)
