"""Whole games of the action scorer on the batched engine, compiled (numba): a fast,
exact strength check of a scorer (:func:`duplicate_score`, 10,000 games a second on two cores),
self-play data (Deep Monte-Carlo: ``docs/experiments/dmcA``) and the positions that
:func:`agents.search.pimc.label_rows` labels.

One call plays many games, each from a given deal (:func:`conquian_env.kernels.start`'s
permutation of the 40 cards), the *learner* (an :class:`agents.scorer.scorer.ActionScorer`, packed by
:func:`agents.scorer.scorer_kernels.pack`) in one seat and an opponent in the other: greedy
(:data:`GREEDY`), another packed scorer (:data:`SCORER`, e.g. an earlier snapshot of the
learner) or uniform random (:data:`RANDOM`).  The learner decides exactly as
:func:`agents.scorer.scorer_kernels.scorer_action` (the scorer bot) does, except that with probability
``eps`` a decision with a choice takes a uniformly random candidate instead; each such decision's
chosen candidate inputs (the learner's candidate size of floats) are written out with the game's index, so
that the game's result can be attached to them afterwards (Monte-Carlo returns).

Games run in ``blocks`` (one numba thread each, ``prange``); block ``b`` plays games
``b, b + blocks, ...`` with its own random stream seeded ``seed + b``, so a call's games, moves
and outputs depend on its arguments only (``blocks`` among them when ``eps`` > 0 or an opponent
plays at random), never on the number of threads or the machine.  The games are the arena's:
the same deal, seats and first player give the same game as :func:`conquian_arena.match.play_game`
with the scorer bot and greedy (``tests/test_selfplay_kernels.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from conquian_env.compiling import prepare_kernels, setup
from conquian_env.kernels import (
    GAME_OVER,
    LCARDS,
    LMISC,
    NUM_COLUMNS,
    PHASE,
    PLAYER,
    WINNER,
    apply,
    nth_legal,
    num_legal,
    start,
)

from ..greedy.greedy_kernels import NUM_FEATURES, encode_features, greedy_action
from .scorer import CANDIDATE_SIZE, MAX_CANDIDATES
from .scorer_kernels import INPUT_MAP, best_candidate, candidates_of, has_choice, scorer_action, scores

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

__all__ = ["GREEDY", "GREEDY_LEARNER", "MAX_DECISIONS", "RANDOM", "SCORER", "duplicate_score", "play_games"]

#: opponent kinds
GREEDY, SCORER, RANDOM = 0, 1, 2
#: the most decisions with a choice one player makes in one game (the outputs' room per game)
MAX_DECISIONS = 40


@njit(cache=True)
def _random_legal(S, i):
    """A uniformly random legal action of row ``i`` (numba's global stream of this thread)."""
    return nth_legal(S, i, np.random.randint(num_legal(S, i)))


@njit(cache=True)
def _block(first_game, step, deals, firsts, seats, kinds, rules, weights, dims, inputs, oweights, odims, oinputs,
           eps, seed, X_out, game_out, R_out, start_row, results):  # fmt: skip
    """Games ``first_game, first_game + step, ...``; rows from ``start_row`` of the outputs."""
    np.random.seed(seed)
    greedy_learner = dims[0] == 0
    S = np.zeros((1, NUM_COLUMNS), np.int64)
    wide = 3 * max(dims.max(), odims.max())  # scorer_kernels.scratch's sizes: room for a pooled [h, mean, max]
    F = np.zeros(NUM_FEATURES, np.float32)
    X = np.zeros((MAX_CANDIDATES, max(X_out.shape[1], dims[0], odims[0])), np.float32)
    width = X_out.shape[1]  # the learner's candidate size
    acts = np.zeros(MAX_CANDIDATES, np.int64)
    out = np.zeros(MAX_CANDIDATES, np.float32)
    h = np.zeros((MAX_CANDIDATES, wide), np.float32)
    g = np.zeros(wide, np.float32)
    row = start_row
    record = X_out.shape[0] > 0
    for game in range(first_game, deals.shape[0], step):
        start(S, 0, deals[game], firsts[game], rules)
        made = 0
        while S[0, PHASE] != GAME_OVER:
            p = S[0, PLAYER]
            if p == seats[game]:
                if (greedy_learner and not record) or not has_choice(S, 0):
                    apply(S, 0, greedy_action(S, 0))
                    continue
                encode_features(S, 0, p, F)
                n = candidates_of(F, S[0, PHASE], S[0, LCARDS], S[0, LMISC], X, acts, inputs)
                if greedy_learner:
                    best, ga = 0, greedy_action(S, 0)
                    for k in range(n):
                        if acts[k] == ga:
                            best = k
                elif eps > 0.0 and np.random.random() < eps:
                    best = np.random.randint(n)
                else:
                    scores(weights, dims, inputs, X, n, out, h, g)
                    best = best_candidate(out, acts, n)
                if record:
                    if made >= MAX_DECISIONS:
                        raise ValueError("more decisions in one game than MAX_DECISIONS")
                    X_out[row, :] = X[best, :width]
                    R_out[row, :] = S[0, :]
                    game_out[row] = game
                    row += 1
                made += 1
                apply(S, 0, acts[best])
            elif kinds[game] == GREEDY:
                apply(S, 0, greedy_action(S, 0))
            elif kinds[game] == SCORER:
                apply(S, 0, scorer_action(S, 0, oweights, odims, oinputs, F, X, acts, out, h, g))
            else:
                apply(S, 0, _random_legal(S, 0))
        results[game] = S[0, WINNER]
    return row


@njit(cache=True, parallel=True)
def _play(deals, firsts, seats, kinds, rules, weights, dims, inputs, oweights, odims, oinputs, eps, seed, blocks,
          X_out, game_out, R_out, counts, results):  # fmt: skip
    rows_per_block = X_out.shape[0] // blocks
    for b in prange(blocks):
        end = _block(b, blocks, deals, firsts, seats, kinds, rules, weights, dims, inputs, oweights, odims, oinputs,
                     eps, seed + b, X_out, game_out, R_out, b * rows_per_block, results)  # fmt: skip
        counts[b] = end - b * rows_per_block


def play_games(deals, firsts, seats, kinds, rules, learner, opponent=None, *, eps=0.0, seed=0, blocks=2,
               record=True):  # fmt: skip
    """Play ``len(deals)`` games (see the module); ``learner`` and ``opponent``: ``(weights, dims, inputs)``
    of :func:`agents.scorer.scorer_kernels.pack` (``opponent`` only where a game's kind is :data:`SCORER`).

    Returns ``(x, game, rows, results)``: the learner's recorded decisions (``x`` float32
    ``(m, size)``: the chosen candidate's inputs, ``size`` the learner's candidate size,
    ``CANDIDATE_SIZE`` for greedy's; game by game, in the order played), the game index of each,
    the engine row of each (the whole state before the move: for
    :func:`agents.search.pimc.label_rows`), and each game's winner (0 or 1; -1 a draw).
    ``record=False`` records nothing (the first three empty).
    """
    deals = np.ascontiguousarray(deals, np.int64)
    n = deals.shape[0]
    if deals.ndim != 2 or deals.shape[1] != 40:
        raise ValueError(f"deals must be (games, 40) card permutations, got shape {deals.shape}")
    blocks = max(1, min(int(blocks), n))
    weights, dims, inputs = learner
    oweights, odims, oinputs = opponent if opponent is not None else (weights, dims, inputs)
    per_block = -(-n // blocks) * MAX_DECISIONS if record else 0
    X_out = np.zeros((per_block * blocks, CANDIDATE_SIZE if dims[0] == 0 else int(dims[0])), np.float32)
    game_out = np.zeros(per_block * blocks, np.int64)
    R_out = np.zeros((per_block * blocks, NUM_COLUMNS), np.int64)
    counts = np.zeros(blocks, np.int64)
    results = np.full(n, -2, np.int64)
    _play(deals, np.asarray(firsts, np.int64), np.asarray(seats, np.int64), np.asarray(kinds, np.int64),
          int(rules), weights, dims, inputs, oweights, odims, oinputs, float(eps), int(seed), blocks, X_out, game_out,
          R_out, counts, results)  # fmt: skip
    if not record:
        return X_out, game_out, R_out, results
    keep = np.concatenate([np.arange(b * per_block, b * per_block + counts[b]) for b in range(blocks)])
    keep = keep[np.argsort(game_out[keep], kind="stable")]  # game by game, each game's decisions in order
    return X_out[keep], game_out[keep], R_out[keep], results


#: ``learner`` for :func:`play_games` that plays greedy's moves (and records them)
GREEDY_LEARNER = (np.zeros(1, np.float32), np.zeros(2, np.int64), INPUT_MAP.copy())


def duplicate_score(learner, deals, *, opponent=GREEDY, other=None, seed=0, blocks=2) -> tuple[float, float]:
    """The learner's score against ``opponent`` (a kind; ``other``: the packed scorer of
    :data:`SCORER`) over duplicate deals: every deal twice, seats swapped, the first player
    alternating from deal to deal; returns ``(score, half-width of its 95% interval)`` with the
    interval from the deals' paired scores (win 1, draw 1/2, loss 0)."""
    deals = np.asarray(deals)
    n = len(deals)
    if n < 2:
        raise ValueError(f"duplicate_score needs at least 2 deals, got {n}")
    both = np.concatenate([deals, deals])
    firsts = np.tile(np.arange(n) % 2, 2)
    seats = np.r_[np.zeros(n, np.int64), np.ones(n, np.int64)]
    _, _, _, res = play_games(both, firsts, seats, np.full(2 * n, opponent), 0, learner, other, seed=seed,
                              blocks=blocks, record=False)  # fmt: skip
    points = np.where(res == seats, 1.0, np.where(res < 0, 0.5, 0.0))
    paired = (points[:n] + points[n:]) / 2
    return float(paired.mean()), float(1.96 * paired.std(ddof=1) / np.sqrt(n))


prepare_kernels(globals())
