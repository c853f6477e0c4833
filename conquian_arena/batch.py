"""The batched game loop: two batched bots play many games at once on the batched engine.

:func:`play_batch` is the twin of the one game loop (:func:`conquian_arena.match.play_game`) for
bots with ``act_batch(games, rows)`` (:mod:`agents.batched`): the same deals and seats, every game
of a batch stepped together (:class:`conquian_env.vector.VectorGame`).  Training's evaluations
and :func:`conquian_arena.pair.play_pair` play through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.extras import missing

try:
    from conquian_env.kernels import GAME_OVER, PHASE, PLAYER, WINNER
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "conquian_arena.batch (the batched game loop)") from None
from conquian_env.rules import Rules
from conquian_env.vector import VectorGame

__all__ = ["play_batch"]


def play_batch(
    bot_a: Any,
    bot_b: Any,
    deals: np.ndarray,
    a_seats: np.ndarray,
    *,
    first: int = 0,
    rules: Rules | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Play ``len(deals)`` games at once between two batched bots.

    ``deals``: (G, 40) card permutations (:func:`conquian_env.vector.deal_permutation`);
    ``a_seats[g]``: the seat of ``bot_a`` in game ``g``.  Returns ``(a_scores, moves)``:
    1 for a win of ``bot_a``, 0.5 for a draw, 0 for a loss, and the decisions each game took.
    """
    deals = np.asarray(deals)
    n = len(deals)
    a_seats = np.asarray(a_seats, dtype=np.int64)
    if a_seats.shape != (n,) or ((a_seats != 0) & (a_seats != 1)).any():
        raise ValueError(f"a_seats must hold a seat, 0 or 1, for each of the {n} games")
    games = VectorGame(n, rules=rules, first=first, observations=False)
    games.reset(deals=deals)
    rows_all = np.arange(n)
    for bot in (bot_a, bot_b):
        reset = getattr(bot, "reset_rows", None)
        if reset is not None:
            reset(rows_all)
    state = games.state
    moves = np.zeros(n, dtype=np.int64)
    while True:
        active = state[:, PHASE] != GAME_OVER
        if not active.any():
            break
        acts = np.full(n, -1, dtype=np.int64)
        a_to_move = state[:, PLAYER] == a_seats
        for bot, mine in ((bot_a, a_to_move), (bot_b, ~a_to_move)):
            rows = np.flatnonzero(active & mine)
            if len(rows):
                acts[rows] = bot.act_batch(games, rows)
        result = games.step(acts, active, autoreset=False, observe=False)
        moves = np.where(result.dones, result.moves, moves)
    winners = state[:, WINNER]
    scores = np.where(winners < 0, 0.5, (winners == a_seats).astype(np.float64))
    return scores, moves
