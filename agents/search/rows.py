"""One player's view as a row of the batched engine (:mod:`conquian_env.kernels`): what the
compiled searches, the belief model and the value model read (the opponent's hidden hand and
the stock empty).  Needs numba (the ``fast`` extra), as the engine's constants do."""

from __future__ import annotations

import numpy as np

from conquian_env.cards import cards_of
from conquian_env.extras import missing
from conquian_env.view import PlayerView

try:
    from conquian_env import kernels as E
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "agents.search.rows (the batched engine's rows)") from None


def view_row(view: PlayerView) -> tuple[np.ndarray, np.ndarray, int]:
    """The player's view as a row of the batched engine, with the opponent's hidden hand
    and the stock empty; the sorted pool of unseen cards; the opponent's hidden hand size."""
    me = view.player
    opp = 1 - me
    row = np.zeros(E.NUM_COLUMNS, dtype=np.int64)
    row[E.H0 + me] = view.hand
    row[E.M0 + me] = view.meld
    row[E.M0 + opp] = view.opponent_meld
    for p in (0, 1):
        row[E.DI0 + p] = view.discards(p)
        row[E.RF0 + p] = view.refusals(p)
    row[E.DEAD] = view.dead
    row[E.CHOSEN] = view.chosen
    row[E.FACE] = view.face_up
    row[E.SOURCE] = max(view.face_up_source, 0)
    row[E.OWNER] = max(view.face_up_owner, 0)
    row[E.PASSED] = int(view.passed)
    row[E.PLAYER] = view.to_move
    row[E.PHASE] = view.phase
    row[E.WINNER] = -1
    row[E.FORCED] = int(view.forced)
    row[E.RULES] = view.rules.flags
    row[E.MOVES] = view.move_count
    row[E.SPOS] = E.STOCK_SIZE - view.stock_left
    pool = np.array(cards_of(view.unseen()), dtype=np.int64)
    return row, pool, view.opponent_hand_size
