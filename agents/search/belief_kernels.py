"""Compiled (numba) half of the belief model of the opponent's hidden hand (:mod:`agents.search.belief`).

Everything here reads a *view row* (a row of the batched engine as :func:`agents.search.pimc.view_row`
makes it: the opponent's hidden hand and the stock empty) and the *pool* of the cards the player
cannot see, sorted ascending.  Nothing reads a hidden card, so the features, the probabilities
and the deals drawn from them do not change when the hidden cards are permuted.

* :func:`card_features`: one row of :data:`NUM_FEATURES` numbers per pool card, laid out as
  :data:`FEATURE_LAYOUT` says;
* :func:`forward`: the network's logit per card (one hidden ReLU layer, weights shared across
  cards), the twin of :func:`agents.search.belief.forward_numpy`;
* :func:`exact_count_logits`: the logits shifted so that the probabilities add up to the
  opponent's hidden-hand size;
* :func:`deal_from_belief`: a deal of the pool, the opponent's hand drawn card by card in
  proportion to the odds ``p / (1 - p)`` (exactly ``n_opp`` cards, never a card outside the pool),
  the rest to the stock in a uniform order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from conquian_env.compiling import prepare_kernels, setup
from conquian_env.kernels import (
    DEAD,
    DI0,
    DISCARDED,
    FACE,
    H0,
    M0,
    MOVES,
    NUM_COLUMNS,
    OWNER,
    PASSED,
    PLAYER,
    RF0,
    SOURCE,
    SPOS,
    STOCK0,
    STOCK_SIZE,
    TURNED,
    can_split,
    popcount,
)

from ..greedy.greedy_kernels import NEIGHBOURS, PARTNER_COUNT, PARTNERS

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

#: the card groups whose cards near the pool card are counted (same rank, one and two ranks
#: away in the suit): the opponent's discards, its refusals of cards that did not fit its
#: meld alone, its meld, the player's meld, the player's hand, the dead pile, the rest of the pool
GROUPS = ("opp_discards", "opp_refusals", "opp_meld", "own_meld", "own_hand", "dead", "pool")
#: the per-card feature layout, (name, size) in order (declared once: offsets derive from it)
FEATURE_LAYOUT = (
    *((f"{g}_near", 3) for g in GROUPS),  # same rank / 1 away / 2 away, each normalised
    ("rank", 10),  # one-hot rank A..K
    ("fits_meld", 2),  # the card alone fits the opponent's meld / the player's meld
    ("pairs", 4),  # partner pairs: both unseen; one discarded + one unseen; one refused + one unseen; live for opp
    ("latest_discard", 4),  # the opponent's discard now face up: same rank / 1 away / 2 away / pairs with it
    ("latest_refusal", 4),  # the opponent's refused turned card now face up: the same four
    ("position", 8),  # moves, stock turned, hidden-hand size, pool size, opp meld, discards, refusals, logit prior
)
NUM_FEATURES = sum(size for _, size in FEATURE_LAYOUT)
FEATURE_OFFSETS = {}
_at = 0
for _name, _size in FEATURE_LAYOUT:
    FEATURE_OFFSETS[_name] = _at
    _at += _size
# the offsets as plain constants for the compiled code (this module's own values: numba's cache sees them)
F_RANK, F_FITS, F_PAIRS = FEATURE_OFFSETS["rank"], FEATURE_OFFSETS["fits_meld"], FEATURE_OFFSETS["pairs"]
F_LATEST, F_POSITION = FEATURE_OFFSETS["latest_discard"], FEATURE_OFFSETS["position"]

# masks of the cards near each card: the other three of its rank, one and two ranks away in its suit
SAME_RANK = np.zeros(40, dtype=np.int64)
ONE_AWAY = np.zeros(40, dtype=np.int64)
TWO_AWAY = np.zeros(40, dtype=np.int64)
for _c in range(40):
    _s, _r = divmod(_c, 10)
    SAME_RANK[_c] = sum(1 << (s * 10 + _r) for s in range(4) if s != _s)
    ONE_AWAY[_c] = sum(1 << (_s * 10 + r) for r in (_r - 1, _r + 1) if 0 <= r < 10)
    TWO_AWAY[_c] = sum(1 << (_s * 10 + r) for r in (_r - 2, _r + 2) if 0 <= r < 10)


@njit(cache=True, inline="always")
def _near(group, c, out, f):
    out[f] = popcount(group & SAME_RANK[c]) / 3.0
    out[f + 1] = popcount(group & ONE_AWAY[c]) / 2.0
    out[f + 2] = popcount(group & TWO_AWAY[c]) / 2.0


@njit(cache=True, inline="always")
def _pairs_with(c, one, other):
    """Partner pairs of ``c`` (two cards making a set or run with it) with one card in ``one``
    and the other in ``other``."""
    n = 0
    for j in range(PARTNER_COUNT[c]):
        pm = PARTNERS[c, j]
        a = pm & -pm
        b = pm ^ a
        if (a & one and b & other) or (b & one and a & other):
            n += 1
    return n


@njit(cache=True)
def card_features(view, pool, n_opp, out):
    """The features of each card of ``pool`` (sorted) in ``out[k]`` (``out``: at least
    ``len(pool)`` rows of :data:`NUM_FEATURES`), from the view row ``view`` of the player to
    move and the opponent's hidden-hand size ``n_opp``."""
    me = view[PLAYER]
    opp = 1 - me
    n = pool.shape[0]
    pool_mask = 0
    for k in range(n):
        pool_mask |= 1 << pool[k]
    opp_meld = view[M0 + opp]
    own_meld = view[M0 + me]
    od = view[DI0 + opp]
    refused = view[RF0 + opp]
    orn = 0  # refusals that did not fit the opponent's meld alone
    while refused:
        low = refused & -refused
        refused ^= low
        if not can_split(opp_meld | low):
            orn |= low
    gone_for_opp = view[DEAD] | own_meld  # what the opponent sees is out of play
    face = view[FACE]
    latest_discard = -1
    latest_refusal = -1
    if face >= 0 and view[OWNER] == opp:
        if view[SOURCE] == DISCARDED:
            latest_discard = face
        elif view[SOURCE] == TURNED and view[PASSED] == 1:
            latest_refusal = face
    groups = np.empty(7, dtype=np.int64)
    groups[0], groups[1], groups[2], groups[3] = od, orn, opp_meld, own_meld
    groups[4], groups[5] = view[H0 + me], view[DEAD]
    size = float(n)
    prior = min(max(n_opp / size, 1e-3), 1.0 - 1e-3) if n > 0 else 0.5
    logit_prior = np.log(prior / (1.0 - prior))
    for k in range(n):
        c = pool[k]
        bit = 1 << c
        row = out[k]
        for f in range(NUM_FEATURES):
            row[f] = 0.0
        groups[6] = pool_mask & ~bit
        for g in range(7):
            _near(groups[g], c, row, 3 * g)
        row[F_RANK + c % 10] = 1.0
        f = F_FITS
        if opp_meld & NEIGHBOURS[c] and can_split(opp_meld | bit):
            row[f] = 1.0
        if own_meld & NEIGHBOURS[c] and can_split(own_meld | bit):
            row[f + 1] = 1.0
        f = F_PAIRS
        rest = pool_mask & ~bit
        count = PARTNER_COUNT[c]
        both = 0
        live = 0
        for j in range(count):
            pm = PARTNERS[c, j]
            if pm & rest == pm:
                both += 1
            if pm & gone_for_opp == 0:
                live += 1
        row[f] = both / count
        row[f + 1] = _pairs_with(c, od, rest) / 2.0
        row[f + 2] = _pairs_with(c, orn, rest) / 2.0
        row[f + 3] = live / count
        f = F_LATEST
        for latest in (latest_discard, latest_refusal):
            if latest >= 0:
                lb = 1 << latest
                row[f] = 1.0 if SAME_RANK[c] & lb else 0.0
                row[f + 1] = 1.0 if ONE_AWAY[c] & lb else 0.0
                row[f + 2] = 1.0 if TWO_AWAY[c] & lb else 0.0
                row[f + 3] = _pairs_with(c, lb, rest) / 2.0
            f += 4
        f = F_POSITION
        row[f] = view[MOVES] / 100.0
        row[f + 1] = view[SPOS] / float(STOCK_SIZE)
        row[f + 2] = n_opp / 10.0
        row[f + 3] = size / 30.0
        row[f + 4] = popcount(opp_meld) / 11.0
        row[f + 5] = popcount(od) / 10.0
        row[f + 6] = popcount(orn) / 10.0
        row[f + 7] = logit_prior
    return n


@njit(cache=True)
def forward(x, n, w0, b0, w1, b1, out):
    """The logit of each of the first ``n`` rows of ``x``: ``relu(x @ w0 + b0) @ w1 + b1``
    into ``out[:n]`` (the twin of :func:`agents.search.belief.forward_numpy`)."""
    hidden = w0.shape[1]
    h = np.empty(hidden, dtype=np.float64)
    for k in range(n):
        for j in range(hidden):
            h[j] = b0[j]
        for f in range(x.shape[1]):
            v = x[k, f]
            if v != 0.0:
                for j in range(hidden):
                    h[j] += v * w0[f, j]
        s = b1[0]
        for j in range(hidden):
            if h[j] > 0.0:
                s += h[j] * w1[j, 0]
        out[k] = s


@njit(cache=True)
def exact_count_logits(logits, n, n_opp):
    """Shift ``logits[:n]`` in place by the one constant that makes their probabilities
    (``sigmoid``) add up to ``n_opp`` (Newton's method on the shift, bracketed); for
    ``n_opp`` = 0 or ``n`` the logits become -inf / +inf (the hand is known)."""
    if n_opp <= 0 or n_opp >= n:
        value = -np.inf if n_opp <= 0 else np.inf
        for k in range(n):
            logits[k] = value
        return
    lo, hi = -60.0, 60.0
    t = 0.0
    for _ in range(60):
        total = 0.0
        slope = 0.0
        for k in range(n):
            p = 1.0 / (1.0 + np.exp(-(logits[k] + t)))
            total += p
            slope += p * (1.0 - p)
        gap = total - n_opp
        if abs(gap) < 1e-10:
            break
        if gap > 0:
            hi = t
        else:
            lo = t
        step = t - gap / slope if slope > 1e-12 else 0.5 * (lo + hi)
        t = step if lo < step < hi else 0.5 * (lo + hi)
    for k in range(n):
        logits[k] += t


@njit(cache=True)
def pool_logits(view, pool, n_opp, w0, b0, w1, b1):
    """The belief's logits for ``pool`` (features, forward pass, exact count): the whole model."""
    n = pool.shape[0]
    x = np.empty((max(n, 1), w0.shape[0]), dtype=np.float64)
    card_features(view, pool, n_opp, x)
    logits = np.empty(n, dtype=np.float64)
    forward(x, n, w0, b0, w1, b1, logits)
    exact_count_logits(logits, n, n_opp)
    return logits


@njit(cache=True, parallel=True)
def features_batch(views, pools, pool_sizes, n_opps, starts, x):
    """:func:`card_features` of many positions at once (on all cores): position ``b``'s pool
    is ``pools[b, :pool_sizes[b]]`` and its rows go to ``x[starts[b]:starts[b] + pool_sizes[b]]``."""
    for b in prange(views.shape[0]):
        card_features(views[b], pools[b, : pool_sizes[b]], n_opps[b], x[starts[b] : starts[b] + pool_sizes[b]])


@njit(cache=True, parallel=True)
def logits_batch(views, pools, pool_sizes, n_opps, w0, b0, w1, b1, out):
    """:func:`pool_logits` of many positions (``out[b, :pool_sizes[b]]``), on all cores."""
    for b in prange(views.shape[0]):
        out[b, : pool_sizes[b]] = pool_logits(views[b], pools[b, : pool_sizes[b]], n_opps[b], w0, b0, w1, b1)


# ---------------------------------------------------------------- random numbers and deals
# (the search's too: :mod:`agents.search._search_kernels` deals uniformly with them)
@njit(cache=True, inline="always")
def next_random(info, at):
    """xorshift64* on ``info[at]`` (the search's generator; never 0): a non-negative int64."""
    x = np.uint64(info[at])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    info[at] = np.int64(x)
    return np.int64((x * np.uint64(2685821657736338717)) >> np.uint64(1))


@njit(cache=True, inline="always")
def random_unit(info, at):
    """A float in ``[0, 1)`` from the search's generator."""
    return (next_random(info, at) >> np.int64(11)) * (1.0 / 4503599627370496.0)


@njit(cache=True)
def shuffle_from(perm, start, info, at):
    """Shuffle ``perm[start:]`` in place, uniformly (Fisher-Yates from the end), with ``info[at]``'s numbers."""
    for k in range(perm.shape[0] - 1, start, -1):
        j = start + next_random(info, at) % (k - start + 1)
        perm[k], perm[j] = perm[j], perm[k]


@njit(cache=True)
def lay_deal(view, perm, n_opp, out):
    """``out``: a copy of ``view`` with ``perm[:n_opp]`` added to the opponent's hidden hand and the rest
    of ``perm``, in its order, in the stock from the next stock position on."""
    for c in range(NUM_COLUMNS):
        out[c] = view[c]
    hidden = 0
    for k in range(n_opp):
        hidden |= 1 << perm[k]
    opp = 1 - view[PLAYER]
    out[H0 + opp] = view[H0 + opp] | hidden
    spos = view[SPOS]
    for k in range(perm.shape[0] - n_opp):
        out[STOCK0 + spos + k] = perm[n_opp + k]


@njit(cache=True)
def deal_from_belief(view, pool, odds, n_opp, info, at, out):
    """One deal of ``pool`` into ``out`` (a copy of ``view``): ``n_opp`` cards to the opponent's
    hand drawn one at a time, each in proportion to its ``odds`` among the cards not drawn yet
    (a card of odds 0 only once no card of positive odds is left), the rest to the stock from
    the next stock position on, in a uniform order; random numbers from ``info[at]``."""
    n = pool.shape[0]
    perm = pool.copy()
    w = odds[:n].copy()
    total = 0.0
    for k in range(n):
        total += w[k]
    for m in range(n_opp):  # the drawn card is swapped to position m
        pick = -1
        if total > 0.0 and np.isfinite(total):
            u = random_unit(info, at) * total
            acc = 0.0
            for k in range(m, n):
                acc += w[k]
                if u < acc and w[k] > 0.0:
                    pick = k
                    break
            if pick < 0:  # rounding at the top end: the last card of positive odds
                for k in range(n - 1, m - 1, -1):
                    if w[k] > 0.0:
                        pick = k
                        break
        elif total > 0.0:  # infinite odds (a card known to be held): the first such card
            for k in range(m, n):
                if w[k] == np.inf:
                    pick = k
                    break
        if pick < 0:  # nothing of positive odds left: uniform among the rest
            pick = m + next_random(info, at) % (n - m)
        total -= w[pick]
        perm[m], perm[pick] = perm[pick], perm[m]
        w[m], w[pick] = w[pick], w[m]
        if total < 0.0 or not np.isfinite(total):
            total = 0.0
            for k in range(m + 1, n):
                total += w[k]
    shuffle_from(perm, n_opp, info, at)  # the stock: a uniform shuffle of the rest
    lay_deal(view, perm, n_opp, out)


@njit(cache=True)
def odds_of(logits):
    """``exp(logits)``: the odds ``p / (1 - p)`` of each card (inf where the card is known held)."""
    return np.exp(logits)


@njit(cache=True)
def hand_frequencies(view, pool, odds, n_opp, seed, deals):
    """How often each card of ``pool`` lands in the opponent's hand over ``deals`` deals of
    :func:`deal_from_belief` (the deal's marginals, estimated)."""
    info = np.zeros(1, dtype=np.int64)
    info[0] = seed if seed != 0 else 0x2545F4914F6CDD1D
    out = np.empty(NUM_COLUMNS, dtype=np.int64)
    counts = np.zeros(pool.shape[0], dtype=np.float64)
    opp = 1 - view[PLAYER]
    for _ in range(deals):
        deal_from_belief(view, pool, odds, n_opp, info, 0, out)
        hand = out[H0 + opp]
        for k in range(pool.shape[0]):
            if hand >> pool[k] & 1:
                counts[k] += 1.0
    return counts / deals


__all__ = [
    "FEATURE_LAYOUT",
    "FEATURE_OFFSETS",
    "NUM_FEATURES",
    "card_features",
    "deal_from_belief",
    "exact_count_logits",
    "features_batch",
    "forward",
    "hand_frequencies",
    "lay_deal",
    "logits_batch",
    "next_random",
    "odds_of",
    "pool_logits",
    "random_unit",
    "shuffle_from",
]


prepare_kernels(globals())
