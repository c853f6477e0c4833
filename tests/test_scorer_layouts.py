"""Every scorer file the loader accepts plays, in Python and compiled alike: crafted stamps whose
meld layout keeps only some of the pieces (no position piece at all, one, all of today's) load,
the Python bot plays whole games with them, and it picks the very move of the compiled twin
(:mod:`agents.scorer.scorer_kernels`) at every offer and discard of random games."""

from __future__ import annotations

import numpy as np
import pytest

from agents.greedy.greedy import GreedyAgent
from agents.scorer.scorer import ActionScorer, ScorerAgent, candidate_layout, load_scorer
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.cards import NUM_CARDS
from conquian_env.layout import MELD_FEATURES, Layout

GREEDY = "greedy_action"


def _layouts() -> dict[str, Layout]:
    cards = [p for p in MELD_FEATURES.pieces if p.size == NUM_CARDS or p.name == GREEDY]
    position = [p for p in MELD_FEATURES.pieces if p.size != NUM_CARDS and p.name != GREEDY]
    assert position, "today's layout has position pieces"
    first = MELD_FEATURES.pieces.index(position[0])
    return {
        "no position piece": Layout("meld", cards),
        "one position piece": Layout("meld", [p for i, p in enumerate(MELD_FEATURES.pieces)
                                              if p.size == NUM_CARDS or p.name == GREEDY or i == first]),
        "today's": MELD_FEATURES,
    }  # fmt: skip


LAYOUTS = _layouts()


def _file(tmp_path, layout: Layout, seed: int = 0):
    inputs = candidate_layout(layout)
    rng = np.random.default_rng(seed)
    scorer = ActionScorer([(rng.normal(0, 0.3, (inputs.size, 8)).astype(np.float32), np.zeros(8, np.float32)),
                           (rng.normal(0, 0.3, (8, 1)).astype(np.float32), np.zeros(1, np.float32))],
                          inputs=inputs)  # fmt: skip
    return scorer.save(tmp_path / "s.npz")


@pytest.mark.parametrize("which", list(LAYOUTS))
def test_a_scorer_file_the_loader_accepts_plays_whole_games_in_python(which, tmp_path):
    # before: a file whose layout listed no position piece loaded, then the Python bot raised at every move
    scorer = load_scorer(_file(tmp_path, LAYOUTS[which]))
    bot = ScorerAgent.from_scorer(scorer, name="crafted")
    for seed in range(2):
        for seats in ((bot, GreedyAgent()), (GreedyAgent(), bot)):
            hands, stock = deal_for_seed(seed)
            record = play_game(list(seats), hands=hands, stock=stock, seed=seed)
            assert record.failure is None, record.failure


@pytest.mark.parametrize("which", list(LAYOUTS))
def test_the_python_and_the_compiled_scorer_pick_the_same_move_on_every_accepted_layout(which, tmp_path):
    pytest.importorskip("numba")
    from agents.scorer import scorer_kernels as SK
    from conquian_env import kernels as E
    from conquian_env.observation import action_mask, encode
    from conquian_env.vector import VectorGame
    from conquian_env.view import PlayerView

    scorer = load_scorer(_file(tmp_path, LAYOUTS[which], seed=1))
    bot = ScorerAgent.from_scorer(scorer, name="crafted")
    net = SK.network(scorer)
    games = VectorGame(32, observations=False, parallel=False, seed=5)
    rng = np.random.default_rng(5)
    compared = 0
    for i in range(32):
        for _ in range(rng.integers(0, 40)):
            S = games.state
            if S[i, E.PHASE] == E.GAME_OVER:
                break
            if S[i, E.PHASE] in (E.OFFER, E.DISCARD) and SK.has_choice(S, i):
                game = games.get_game(i)
                p = game.player
                bot.reset(p)
                move = bot.act(encode(game, p), action_mask(game, p), PlayerView(game, p))
                assert move == SK.scorer_action(S, i, *net), (which, i)
                compared += 1
            E.apply(S, i, E.random_legal(S, i, rng.random()))
    assert compared >= 20
