"""Compiled (numba) half of the leaf value of a determinized (full) position (:mod:`agents.value`).

The search (:mod:`agents._search_kernels`) deals every card, so a playout position is a full
row of the batched engine (:mod:`conquian_env.kernels`): both hands, both melds, the dead pile,
the card face up.  The leaf value is the probability (a draw counting half) that player ``p``
wins from such a row at an offer, the stock order unknown, when the rest of the game is played
as in the games the value was fitted on (:mod:`conquian_train.value`).

* :func:`position_features`: :data:`NUM_FEATURES` numbers of row ``S[i]`` from ``p``'s side,
  laid out as :data:`FEATURE_LAYOUT` says (the stock columns are not read);
* :func:`leaf_value`: the network's value of that row (one hidden ReLU layer, a sigmoid), the
  twin of :func:`agents.value.forward_numpy` (the tests hold them equal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from conquian_env.kernels import (
    CHOSEN,
    DEAD,
    FACE,
    H0,
    M0,
    OFFER,
    PASSED,
    PHASE,
    PLAYER,
    SOURCE,
    SPOS,
    STOCK_SIZE,
    TURNED,
    can_extend,
    can_split,
    lowest_bit_index,
    popcount,
)

from .greedy_kernels import live_cards, position_value

#: the feature layout of a position from player p's side, (name, size) in order
FEATURE_LAYOUT = (
    ("own_hand", 40),
    ("own_meld", 40),
    ("opp_hand", 40),
    ("opp_meld", 40),
    ("dead", 40),
    ("face", 40),  # the card offered now, one-hot
    ("offer", 4),  # offered to p / to the opponent; turned (not a discard); a turned card already refused once
    ("greedy_value", 2),  # greedy's hand evaluation (position_value) of p's and the opponent's hand, / 11
    ("sizes", 5),  # hand sizes / 10, meld sizes / 11, stock left / 20
    ("face_fits", 2),  # the face card can be taken (some hand cards make a valid meld with it) by p / by the opponent
)
NUM_FEATURES = sum(size for _, size in FEATURE_LAYOUT)
FEATURE_OFFSETS = {}
_at = 0
for _name, _size in FEATURE_LAYOUT:
    FEATURE_OFFSETS[_name] = _at
    _at += _size
F_OFFER = FEATURE_OFFSETS["offer"]
F_GREEDY = FEATURE_OFFSETS["greedy_value"]
F_SIZES = FEATURE_OFFSETS["sizes"]
F_FITS = FEATURE_OFFSETS["face_fits"]


@njit(cache=True, inline="always")
def _bits(x, at, mask):
    while mask:
        low = mask & -mask
        mask ^= low
        x[at + lowest_bit_index(low)] = 1.0


@njit(cache=True)
def _fits(face, hand, meld):
    """Whether the offered ``face`` card can be taken: some hand cards make a valid meld with it."""
    card = 1 << face
    if can_split(meld | card):
        return True
    return can_extend(meld | card, hand)


@njit(cache=True)
def position_features(S, i, p, x):
    """The features of row ``S[i]`` from player ``p``'s side into ``x`` (length NUM_FEATURES)."""
    for k in range(x.shape[0]):
        x[k] = 0.0
    q = 1 - p
    hand, opp_hand = S[i, H0 + p] & ~S[i, CHOSEN], S[i, H0 + q] & ~S[i, CHOSEN]
    meld, opp_meld = S[i, M0 + p], S[i, M0 + q]
    _bits(x, 0, hand)
    _bits(x, 40, meld)
    _bits(x, 80, opp_hand)
    _bits(x, 120, opp_meld)
    _bits(x, 160, S[i, DEAD])
    face = S[i, FACE]
    if face >= 0:
        x[200 + face] = 1.0
        if S[i, PHASE] == OFFER:
            x[F_OFFER + (0 if S[i, PLAYER] == p else 1)] = 1.0
        x[F_OFFER + 2] = 1.0 if S[i, SOURCE] == TURNED else 0.0
        x[F_OFFER + 3] = 1.0 if S[i, PASSED] else 0.0
        x[F_FITS] = 1.0 if _fits(face, hand, meld) else 0.0
        x[F_FITS + 1] = 1.0 if _fits(face, opp_hand, opp_meld) else 0.0
    x[F_GREEDY] = position_value(hand, meld, live_cards(S, i, p)) / 11.0
    x[F_GREEDY + 1] = position_value(opp_hand, opp_meld, live_cards(S, i, q)) / 11.0
    x[F_SIZES] = popcount(hand) / 10.0
    x[F_SIZES + 1] = popcount(opp_hand) / 10.0
    x[F_SIZES + 2] = popcount(meld) / 11.0
    x[F_SIZES + 3] = popcount(opp_meld) / 11.0
    x[F_SIZES + 4] = (STOCK_SIZE - S[i, SPOS]) / 20.0


@njit(cache=True)
def forward(x, w0, b0, w1, b1, h):
    """``sigmoid(relu(x @ w0 + b0) @ w1 + b1)`` (``h``: scratch of the hidden size)."""
    hidden = w0.shape[1]
    for j in range(hidden):
        h[j] = b0[j]
    for k in range(x.shape[0]):
        xk = x[k]
        if xk != 0.0:
            for j in range(hidden):
                h[j] += xk * w0[k, j]
    z = b1[0]
    for j in range(hidden):
        if h[j] > 0.0:
            z += h[j] * w1[j, 0]
    return 1.0 / (1.0 + np.exp(-z))


@njit(cache=True)
def leaf_value(S, i, p, w0, b0, w1, b1, x, h):
    """The value of row ``S[i]`` for player ``p`` (``x``, ``h``: scratch arrays)."""
    position_features(S, i, p, x)
    return forward(x, w0, b0, w1, b1, h)


@njit(cache=True)
def batch_features(rows, players):
    """The features of every row of ``rows`` (at least the first 23 columns of a full row) from
    ``players[b]``'s side: an ``(N, NUM_FEATURES)`` array (the fit's input)."""
    n = rows.shape[0]
    out = np.zeros((n, NUM_FEATURES), dtype=np.float64)
    S = np.zeros((1, 43), dtype=np.int64)
    for b in range(n):
        for c in range(rows.shape[1]):
            S[0, c] = rows[b, c]
        position_features(S, 0, players[b], out[b])
    return out


__all__ = ["FEATURE_LAYOUT", "NUM_FEATURES", "batch_features", "forward", "leaf_value", "position_features"]
