"""The compiled whole games of the action scorer (agents.scorer.selfplay_kernels) against the Python engine."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from agents.greedy.greedy import GreedyAgent  # noqa: E402
from agents.greedy.greedy_kernels import encode_features  # noqa: E402
from agents.scorer import selfplay_kernels as SP  # noqa: E402
from agents.scorer.scorer import DEFAULT_SCORER, ScorerAgent, load_scorer  # noqa: E402
from agents.scorer.scorer_kernels import candidates_of, pack, scorer_action  # noqa: E402
from agents.scorer.scorer_kernels import scratch as net_scratch  # noqa: E402
from agents.search.pimc import label_rows  # noqa: E402
from conquian_arena.match import deal_for_seed, play_game  # noqa: E402
from conquian_env import kernels as E  # noqa: E402
from conquian_env.vector import deal_cards  # noqa: E402


def _deals(seeds):
    """Kernel deals of ``new_game(seed)``: its own permutation (cards 0..19 dealt alternately)."""
    deals = np.stack([np.random.default_rng(s).permutation(40) for s in seeds])
    for s, d in zip(seeds, deals, strict=True):  # the same deal as the arena's for the seed
        assert deal_cards(d) == tuple(deal_for_seed(s))
    return deals


def _arena(seed, first, scorer_seat, scorer=None):
    hands, stock = deal_for_seed(seed)
    bots = [GreedyAgent(), GreedyAgent()]
    bots[scorer_seat] = ScorerAgent(str(DEFAULT_SCORER)) if scorer is None else ScorerAgent.from_scorer(scorer)
    record = play_game(bots, hands=hands, stock=stock, first=first)
    return -1 if record.winner is None else record.winner, record.moves


def _pooled():
    """A deep-sets scorer: the shipped one's first layer, pooled, then random layers that read it."""
    from agents.scorer.scorer import ActionScorer

    w0, b0 = load_scorer(DEFAULT_SCORER).layers[0]
    rng = np.random.default_rng(8)
    w1 = rng.normal(0, 0.05, (3 * w0.shape[1], 32)).astype(np.float32)
    return ActionScorer([(w0, b0), (w1, np.zeros(32, np.float32)), (rng.normal(0, 0.2, (32, 1)).astype(np.float32),
                         np.zeros(1, np.float32))], pool_after=0)  # fmt: skip


@pytest.mark.parametrize("which", ["shipped", "pooled"])
def test_the_compiled_games_are_the_arenas_games(which):
    """eps = 0: the scorer against greedy, every game ending as the arena's (same deal, seats, first);
    the shipped scorer and a deep-sets one."""
    scorer = load_scorer(DEFAULT_SCORER) if which == "shipped" else _pooled()
    net = pack(scorer)
    seeds = list(range(40))
    firsts, seats = np.arange(40) % 2, (np.arange(40) // 2) % 2
    x, game, rows, results = SP.play_games(_deals(seeds), firsts, seats, np.full(40, SP.GREEDY), 0, net)
    for k, s in enumerate(seeds):
        winner, _ = _arena(s, int(firsts[k]), int(seats[k]), scorer)
        assert results[k] == winner, s
    # every recorded decision is the learner's, in a position with a choice, its inputs those of the move made
    assert len(game) > 200 and np.all(np.diff(game) >= 0)
    F, X, acts, out, h, g = net_scratch(net[1])
    for r in range(0, len(game), 7):
        S = rows[r : r + 1].copy()
        assert S[0, E.PLAYER] == seats[game[r]] and S[0, E.PHASE] in (E.OFFER, E.DISCARD)
        move = scorer_action(S, 0, *net, F, X, acts, out, h, g)  # the bot's move there
        encode_features(S, 0, S[0, E.PLAYER], F)
        n = candidates_of(F, S[0, E.PHASE], S[0, E.LCARDS], S[0, E.LMISC], X, acts, net[2])  # its own inputs
        chosen = [k for k in range(n) if acts[k] == move]
        assert len(chosen) == 1 and np.array_equal(X[chosen[0]], x[r])


def test_games_depend_on_the_arguments_only():
    net = pack(load_scorer(DEFAULT_SCORER))
    deals = _deals(range(100, 160))
    firsts, seats = np.zeros(60, int), np.arange(60) % 2
    kinds = np.array([SP.GREEDY, SP.SCORER, SP.RANDOM] * 20)
    a = SP.play_games(deals, firsts, seats, kinds, 0, net, net, eps=0.1, seed=4, blocks=2)
    b = SP.play_games(deals, firsts, seats, kinds, 0, net, net, eps=0.1, seed=4, blocks=2)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    c = SP.play_games(deals, firsts, seats, kinds, 0, net, net, eps=0.0, seed=4, blocks=1)
    d = SP.play_games(deals, firsts, seats, kinds[:1].repeat(60) * 0, 0, net, net, eps=0.0, blocks=3)
    np.testing.assert_array_equal(c[3][kinds == SP.GREEDY], d[3][kinds == SP.GREEDY])  # eps 0: blocks do not matter
    assert np.all(np.isin(a[3], (-1, 0, 1)))


def test_the_greedy_learner_plays_greedy():
    deals = _deals(range(20))
    _, _, _, res = SP.play_games(
        deals, np.zeros(20, int), np.zeros(20, int), np.full(20, SP.GREEDY), 0, SP.GREEDY_LEARNER
    )
    for k in range(20):
        hands, stock = deal_for_seed(k)
        rec = play_game([GreedyAgent(), GreedyAgent()], hands=hands, stock=stock, first=0)
        assert res[k] == (-1 if rec.winner is None else rec.winner)


def test_bad_deals_are_named():
    net = pack(load_scorer(DEFAULT_SCORER))
    with pytest.raises(ValueError, match="deals must be"):
        SP.play_games(np.zeros((3, 39), int), [0] * 3, [0] * 3, [0] * 3, 0, net)


def _greedy_rows(n_games=60, seed=0):
    deals = _deals(range(seed, seed + n_games))
    _, game, rows, _ = SP.play_games(deals, np.arange(n_games) % 2, np.zeros(n_games, int), np.full(n_games, SP.GREEDY),
                                     0, SP.GREEDY_LEARNER)  # fmt: skip
    return game, rows


def _python_outcome(row, action, me):
    from conquian_env.vector import VectorGame
    from conquian_env.view import PlayerView

    vg = VectorGame(1, observations=False, parallel=False, seed=0)
    vg.state[0] = row
    state = vg.get_game(0)
    state.apply(int(action))
    greedy = GreedyAgent()
    while not state.is_terminal():
        state.apply(greedy.choose(PlayerView(state, state.player)))
    return 0.5 if state.winner in (None, -1) else float(state.winner == me)


def test_late_labels_are_the_python_engines_greedy_continuations():
    """With one card or none left in the stock, a true-hand label is one exact game: the Python engine's."""
    _, rows = _greedy_rows(200)
    late = rows[rows[:, E.SPOS] >= E.STOCK_SIZE - 1]
    assert len(late) >= 5
    X, A, Q, N = label_rows(late, 1, knows_hand=True)
    for i in range(len(late)):
        assert N[i] >= 2
        for k in range(N[i]):
            assert Q[i, k] == _python_outcome(late[i], A[i, k], late[i, E.PLAYER]), (i, k)


def test_labels_do_not_depend_on_how_the_unseen_cards_lie():
    """The draws are made from the unseen cards as a set: the stock's order (and, redealt, the
    opponent's hidden hand against the stock) changes no label; blocks change nothing either."""
    _, rows = _greedy_rows(40, seed=7)
    rows = rows[rows[:, E.SPOS] < E.STOCK_SIZE - 3][:40]
    moved = rows.copy()
    rng = np.random.default_rng(0)
    for r in moved:
        left = r[E.STOCK0 + r[E.SPOS] : E.STOCK0 + E.STOCK_SIZE]
        left[:] = rng.permutation(left)
    base = label_rows(rows, 8, knows_hand=True, seed=3, blocks=2)
    for got in (
        label_rows(moved, 8, knows_hand=True, seed=3, blocks=1),
        label_rows(rows, 8, knows_hand=True, seed=3, blocks=3),
    ):
        for u, v in zip(base, got, strict=True):
            np.testing.assert_array_equal(u, v)
    # redealt: swap one hidden card of the opponent with one card left in the stock
    swapped = rows.copy()
    for r in swapped:
        opp = 1 - r[E.PLAYER]
        hidden = int(r[E.H0 + opp] & ~r[E.CHOSEN])
        card = (hidden & -hidden).bit_length() - 1
        at = E.STOCK0 + r[E.SPOS]
        r[E.H0 + opp] = (r[E.H0 + opp] & ~(1 << card)) | (1 << int(r[at]))
        r[at] = card
    a = label_rows(rows, 8, seed=3)
    b = label_rows(swapped, 8, seed=3)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(base[2], a[2])  # the true hand and a redealt one do differ
    assert np.all((a[2] >= 0) & (a[2] <= 1))


def test_bad_rows_are_named():
    _, rows = _greedy_rows(5)
    with pytest.raises(ValueError, match="engine rows"):
        label_rows(rows[:, :10], 4)
    meld = rows[:1].copy()
    meld[0, E.PHASE] = E.MELD
    with pytest.raises(ValueError, match=r"rows\[0\] is not a decision with a choice"):
        label_rows(meld, 4)
    with pytest.raises(ValueError, match="playouts"):
        label_rows(rows, 0)


def test_the_duplicate_score_is_the_arenas():
    """Each deal twice, seats swapped, first player alternating: the mean of the arena's results."""
    net = pack(load_scorer(DEFAULT_SCORER))
    seeds = list(range(300, 316))
    score, half = SP.duplicate_score(net, _deals(seeds))
    points = []
    for seat in (0, 1):
        for k, s in enumerate(seeds):
            winner, _ = _arena(s, k % 2, seat)
            points.append(0.5 if winner < 0 else float(winner == seat))
    assert score == pytest.approx(np.mean(points))
    assert 0 < half < 0.5
    with pytest.raises(ValueError, match="at least 2 deals"):
        SP.duplicate_score(net, _deals([1]))
