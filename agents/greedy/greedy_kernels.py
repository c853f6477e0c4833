"""Compiled (numba) twins of the greedy bot and of the ``"meld"`` features, on the rows of
the batched engine (:class:`conquian_env.vector.VectorGame`).

Public for the compiled search and belief kernels, which share its tables and plans; it
reads the rows of :mod:`conquian_env.kernels` and uses its meld kernels.
Each function states the same rule as its Python twin in :mod:`agents.greedy.greedy` /
:mod:`agents.scorer.features` (named in its docstring) and returns bit for bit the same floats:
every sum is taken in the same order, every comparison is the same strict or non-strict
one, and candidates are tried in the same order, so ties go the same way.
``tests/test_batched_greedy.py`` plays games through both and compares every decision and
every feature vector.

* :func:`greedy_action` is ``GreedyAgent.choose`` for the player to move.  The agent keeps
  its lay-down plan across the meld phase; this port is stateless and recomputes it: the
  plan made when the card was taken (:func:`plan_take` with nothing chosen yet), re-planned
  from the cards already chosen when they leave that plan, as the agent does.  That is
  the agent's plan whenever the meld so far followed its own plan (always, when the agent
  made the meld).
* :func:`encode_features` is ``FeatureEncoder.encode`` (its greedy choice as above).

Only what the player can see is read: own hand, both melds, the opponent's hand size,
the dead pile, the face-up card with its source, owner and passed flag, the chosen cards,
the phase and the legal actions.  The Python API at the bottom (:func:`greedy_actions`,
:func:`batch_features`) takes a :class:`~conquian_env.vector.VectorGame`.

numba freezes the module-level tables and weights below (and the compiled meld kernels)
into its on-disk cache, which is keyed on this file only; :func:`_check_cache` notices
when :mod:`agents.greedy.greedy`, :mod:`agents.scorer.features` or the meld kernels changed since and
throws the stale cache away.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numba import njit, prange

from conquian_env import kernels as _engine
from conquian_env import melds as _melds
from conquian_env.compiling import flush_caches, prepare_kernels, setup
from conquian_env.kernels import (
    CHOSEN,
    DEAD,
    DISCARD,
    DISCARD_BASE,
    FACE,
    FINISH,
    FORCE,
    FORCE_DECISION,
    GAME_OVER,
    H0,
    LCARDS,
    LMISC,
    M0,
    M1,
    MELD,
    NO_FORCE,
    NUM_COLUMNS,
    OBS_SIZE,
    OFFER,
    OWNER,
    PASSED,
    PHASE,
    PLAYER,
    REFUSE,
    SOURCE,
    TAKE,
    TURNED,
    can_split,
    lowest_bit_index,
    playable,
)
from conquian_env.kernels import encode as _encode_observation
from conquian_env.kernels import popcount as _popcount
from conquian_env.layout import MELD_FEATURES
from conquian_env.potential_kernels import combining, fits, neighbours_of, winning_cards

from . import greedy_weights as _greedy

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

FULL = (1 << 40) - 1

# the greedy weights (agents.greedy.greedy)
PARTIAL_WEIGHT = float(_greedy.PARTIAL_WEIGHT)
DISTANT_WEIGHT = float(_greedy.DISTANT_WEIGHT)
READY_BONUS = float(_greedy.READY_BONUS)
OUT_WEIGHT = float(_greedy.OUT_WEIGHT)
FEED_PENALTY = float(_greedy.FEED_PENALTY)
FEED_PENALTY_NEAR_OUT = float(_greedy.FEED_PENALTY_NEAR_OUT)
FORCE_MIN_HAND = int(_greedy.FORCE_MIN_HAND)
LAY_COST = float(_greedy.LAY_COST)
MAX_FULL_ENUM = int(_greedy.MAX_FULL_ENUM)

#: PARTNERS[c, :PARTNER_COUNT[c]]: greedy.PARTNERS[c] in its order
PARTNER_COUNT = np.array([len(p) for p in _greedy.PARTNERS], dtype=np.int64)
PARTNERS = np.zeros((40, int(PARTNER_COUNT.max())), dtype=np.int64)
for _c, _pairs in enumerate(_greedy.PARTNERS):
    PARTNERS[_c, : len(_pairs)] = _pairs
NEIGHBOURS = np.array(_greedy.NEIGHBOURS, dtype=np.int64)

# feature slots (conquian_env.layout.MELD_FEATURES; checked against the on-disk cache by _check_cache)
_AT = MELD_FEATURES.offsets
F_LIVE, F_FIT_OWN, F_FIT_OPP, F_QUALITY = (
    _AT["live"],
    _AT["fits_own_meld"],
    _AT["fits_opponent_meld"],
    _AT["hand_quality"],
)
F_COMBINES, F_OUTS, F_DISCARD, F_PLAN = (
    _AT["combines_with_hand"],
    _AT["winning_cards"],
    _AT["discard_value"],
    _AT["lay_plan"],
)
F_GREEDY, F_SCALARS = _AT["greedy_action"], _AT["scalars"]
NUM_FEATURES = MELD_FEATURES.size


# ---------------------------------------------------------------- evaluation (greedy.py)
@njit(cache=True)
def card_quality(card, hand, meld, live):
    """greedy.card_quality."""
    bit = 1 << card
    if meld & NEIGHBOURS[card] and can_split(meld | bit):
        return 1.0
    held = (hand | meld) & ~bit
    q = 0.0
    for k in range(PARTNER_COUNT[card]):
        pm = PARTNERS[card, k]
        have = pm & held
        if have == pm:
            if pm & meld == 0 or can_split(meld | bit | pm):
                return 1.0
            continue
        if pm & ~held & ~live:
            continue  # a partner is gone
        if have:
            if have & meld == 0 or can_split(meld | bit | pm):
                q += PARTIAL_WEIGHT
        else:
            q += DISTANT_WEIGHT
    return q if q < 1.0 else 1.0


@njit(cache=True)
def _value_tail(value, hopeless, candidates, hand, meld, live):
    """The end of greedy._value_given: the ready-hand bonus."""
    if hopeless:
        return value
    if candidates == -1:
        candidates = neighbours_of(hand | meld, NEIGHBOURS)
    if candidates & live:
        outs = _popcount(winning_cards(hand, meld, live, candidates))
        if outs:
            value += READY_BONUS + OUT_WEIGHT * outs
    return value


#: no qualities known (:func:`position_value` computes every card's)
_NO_QUALITY = np.zeros(40, dtype=np.float64)


@njit(cache=True)
def _value_given(hand, meld, live, quality, d):
    """greedy._value_given of ``hand``'s qualities, in card order: each card's quality from
    ``quality`` when ``d >= 0`` and the card is no neighbour of ``d`` (the card ``hand`` came from
    discarding), else computed afresh."""
    value = float(_popcount(meld))
    candidates = -1
    hopeless = False
    rest = hand
    while rest:
        low = rest & -rest
        rest ^= low
        c = lowest_bit_index(low)
        q = card_quality(c, hand, meld, live) if d < 0 or NEIGHBOURS[c] >> d & 1 else quality[c]
        if q < 1.0:
            hopeless = hopeless or q == 0.0
            candidates &= NEIGHBOURS[c]
        value += q
    return _value_tail(value, hopeless, candidates, hand, meld, live)


@njit(cache=True)
def position_value(hand, meld, live):
    """greedy.position_value (greedy._value_given of the hand's qualities, in card order)."""
    return _value_given(hand, meld, live, _NO_QUALITY, -1)


@njit(cache=True)
def feed_penalty(card, opp_meld, opp_hand_size):
    """greedy.feed_penalty."""
    if opp_meld & NEIGHBOURS[card] and can_split(opp_meld | 1 << card):
        return FEED_PENALTY_NEAR_OUT if opp_hand_size <= 1 else FEED_PENALTY
    return 0.0


@njit(cache=True)
def discard_values(hand, meld, live, opp_meld, opp_hand_size, values):
    """greedy.discard_values: ``values[d]`` for every hand card ``d`` (other slots untouched)."""
    quality = np.empty(40, dtype=np.float64)
    cards = hand
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        quality[c] = card_quality(c, hand, meld, live)
    ds = hand
    while ds:
        dbit = ds & -ds
        ds ^= dbit
        d = lowest_bit_index(dbit)
        value = _value_given(hand & ~dbit, meld, live, quality, d)  # the qualities left, in card order
        values[d] = value - feed_penalty(d, opp_meld, opp_hand_size)


@njit(cache=True)
def choose_discard(hand, meld, live, opp_meld, opp_hand_size):
    """greedy.choose_discard: ``(card, value)``, the first card of highest value."""
    values = np.empty(40, dtype=np.float64)
    discard_values(hand, meld, live, opp_meld, opp_hand_size, values)
    return _first_highest(hand, values)


@njit(cache=True)
def _first_highest(hand, values):
    """The first card of ``hand`` (in card order) of highest ``values[card]``, and that value."""
    best_card, best_value = -1, -1e9
    cards = hand
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        if values[c] > best_value:
            best_card, best_value = c, values[c]
    return best_card, best_value


@njit(cache=True)
def plan_take(hand, meld, card, chosen, live, opp_meld, opp_hand_size):
    """greedy.plan_take: ``(hand cards to lay, discard or -1, value)``.

    The candidate lays in greedy's order: subsets of the playable hand cards by size,
    and within a size in binary counting order (bit ``b`` = the ``b``-th playable card
    in card order), i.e. Gosper's next-subset sequence; with more than ``MAX_FULL_ENUM``
    playable cards only the subsets of at most three cards, then all of them.
    """
    base = meld | 1 << card | chosen
    rest = hand & ~chosen
    if can_split(base | rest):
        return rest, -1, np.inf
    can_join = playable(base, rest)
    n = _popcount(can_join)
    bits = np.empty(max(n, 1), dtype=np.int64)
    m = can_join
    for b in range(n):
        bits[b] = m & -m
        m &= m - 1
    largest = n if n <= MAX_FULL_ENUM else 3
    best_lay, best_discard, best_value = 0, -1, -np.inf
    end = 1 << n
    for size in range(largest + 2):
        if size <= largest:
            j = (1 << size) - 1
        elif n > MAX_FULL_ENUM:
            j = end - 1  # all playable cards, after the small lays
        else:
            break
        while j < end:
            lay = 0
            for b in range(n):
                if j >> b & 1:
                    lay |= bits[b]
            new_meld = base | lay
            if can_split(new_meld):
                discard, value = choose_discard(rest & ~lay, new_meld, live, opp_meld, opp_hand_size)
                value -= LAY_COST * _popcount(lay)
                if value > best_value:
                    best_lay, best_discard, best_value = lay, discard, value
            if size == 0 or size > largest:
                break
            low = j & -j  # Gosper: the next larger j with as many bits
            ripple = j + low
            j = (((ripple ^ j) >> 2) // low) | ripple
    return best_lay, best_discard, best_value


@njit(cache=True)
def take_margin(hand, meld, card, live, opp_meld, opp_hand_size, passes_to_opponent):
    """greedy.take_margin (the margin only)."""
    value = plan_take(hand, meld, card, 0, live, opp_meld, opp_hand_size)[2]
    keep = position_value(hand, meld, live)
    if passes_to_opponent:
        keep -= feed_penalty(card, opp_meld, opp_hand_size)
    return value - keep


# ---------------------------------------------------------------- decisions (GreedyAgent.choose)
@njit(cache=True)
def live_cards(S, i, player):
    """GameState.unseen_cards(player)."""
    seen = S[i, H0 + player] | S[i, M0] | S[i, M1] | S[i, DEAD] | S[i, CHOSEN]
    if S[i, FACE] >= 0:
        seen |= 1 << S[i, FACE]
    return FULL & ~seen


@njit(cache=True, inline="always")
def _lowest_legal(phase, cards, misc):
    """The lowest action id of the legal mask (-1 when none)."""
    if cards:
        c = lowest_bit_index(cards)
        return DISCARD_BASE + c if phase == DISCARD else c
    if misc:
        return TAKE + lowest_bit_index(misc)
    return -1


@njit(cache=True, inline="always")
def _highest_bit_index(x):
    i = 63
    while not (x >> i) & 1:
        i -= 1
    return i


@njit(cache=True, inline="always")
def _replay(plan, chosen, cards, misc):
    """GreedyAgent.choose in the meld phase, given the plan (hand cards to lay)."""
    todo = plan & ~chosen & cards
    if todo:
        return _highest_bit_index(todo)  # meld action id == card index
    if misc >> (FINISH - TAKE) & 1:
        return FINISH
    return _lowest_legal(MELD, cards, misc)


@njit(cache=True, inline="always")
def refusing_feeds_opponent(S, i, p):
    """greedy.refusing_feeds_opponent for player ``p`` in game ``i`` (the search's playouts ask it too)."""
    return S[i, SOURCE] == TURNED and S[i, OWNER] == p and S[i, PASSED] == 0


@njit(cache=True)
def greedy_action(S, i):
    """GreedyAgent.choose for the player to move in game ``i`` (-1 when the game is over)."""
    phase = S[i, PHASE]
    if phase == GAME_OVER:
        return -1
    cards, misc = S[i, LCARDS], S[i, LMISC]
    if _popcount(cards) + _popcount(misc) <= 1:
        return _lowest_legal(phase, cards, misc)  # only one legal action (or none)
    p = S[i, PLAYER]
    hand, meld, opp_meld = S[i, H0 + p], S[i, M0 + p], S[i, M0 + 1 - p]
    opp_size = _popcount(S[i, H0 + 1 - p])
    live = live_cards(S, i, p)
    if phase == OFFER:
        if not misc & 1:
            return REFUSE
        margin = take_margin(hand, meld, S[i, FACE], live, opp_meld, opp_size, refusing_feeds_opponent(S, i, p))
        return TAKE if margin >= 0 else REFUSE
    if phase == MELD:
        face, chosen = S[i, FACE], S[i, CHOSEN]
        plan = plan_take(hand, meld, face, 0, live, opp_meld, opp_size)[0]
        if chosen & ~plan:
            plan = plan_take(hand, meld, face, chosen, live, opp_meld, opp_size)[0] | chosen
        return _replay(plan, chosen, cards, misc)
    if phase == DISCARD:
        return DISCARD_BASE + choose_discard(hand, meld, live, opp_meld, opp_size)[0]
    if phase == FORCE_DECISION:
        return FORCE if opp_size >= FORCE_MIN_HAND else NO_FORCE
    return _lowest_legal(phase, cards, misc)


# ---------------------------------------------------------------- features (FeatureEncoder.encode)
@njit(cache=True, inline="always")
def _put(out, at, cards, value):
    while cards:
        low = cards & -cards
        cards ^= low
        out[at + lowest_bit_index(low)] = value


@njit(cache=True)
def encode_features(S, i, player, out):
    """FeatureEncoder().encode(state, player) into the float32 row ``out`` (NUM_FEATURES)."""
    raw = np.empty(OBS_SIZE, dtype=np.int8)
    _encode_observation(S, i, player, raw)
    for k in range(OBS_SIZE):
        out[k] = raw[k]
    for k in range(OBS_SIZE, NUM_FEATURES):
        out[k] = 0.0
    opp = 1 - player
    hand, meld, opp_meld = S[i, H0 + player], S[i, M0 + player], S[i, M0 + opp]
    opp_size = _popcount(S[i, H0 + opp])
    live = live_cards(S, i, player)
    held = hand | meld
    _put(out, F_LIVE, live, 1.0)
    outside = ~held & FULL
    _put(out, F_FIT_OWN, fits(meld, outside, NEIGHBOURS), 1.0)
    _put(out, F_FIT_OPP, fits(opp_meld, outside & ~opp_meld, NEIGHBOURS), 1.0)
    cards = hand
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        out[F_QUALITY + c] = card_quality(c, hand, meld, live)
    combines, near = combining(hand, outside, live, PARTNERS, PARTNER_COUNT, NEIGHBOURS)
    _put(out, F_COMBINES, combines, 1.0)
    _put(out, F_COMBINES, near, 0.5)
    outs = winning_cards(hand, meld, live, neighbours_of(held, NEIGHBOURS)) if hand else 0
    _put(out, F_OUTS, outs, 1.0)
    value = position_value(hand, meld, live)
    phase = S[i, PHASE]
    take_edge, can_take = 0.0, 0.0
    if phase != GAME_OVER and S[i, PLAYER] == player:
        lcards, misc = S[i, LCARDS], S[i, LMISC]
        single = _popcount(lcards) + _popcount(misc) <= 1
        action = _lowest_legal(phase, lcards, misc)  # the one legal action when single
        if phase == DISCARD and hand:
            values = np.empty(40, dtype=np.float64)
            discard_values(hand, meld, live, opp_meld, opp_size, values)
            greedy_card, best = _first_highest(hand, values)  # choose_discard (values are far above -1e9)
            cards = hand
            while cards:
                low = cards & -cards
                cards ^= low
                c = lowest_bit_index(low)
                x = 1.0 + (values[c] - best) / 4.0
                out[F_DISCARD + c] = x if x > 0.0 else 0.0
            if not single:
                action = DISCARD_BASE + greedy_card
        elif phase == MELD:
            face, chosen = S[i, FACE], S[i, CHOSEN]
            lay = plan_take(hand, meld, face, chosen, live, opp_meld, opp_size)[0]
            _put(out, F_PLAN, lay & ~chosen, 1.0)
            if not single:
                plan = lay if chosen == 0 else plan_take(hand, meld, face, 0, live, opp_meld, opp_size)[0]
                if chosen & ~plan:
                    plan = lay | chosen
                action = _replay(plan, chosen, lcards, misc)
        elif phase == OFFER and misc & 1:
            can_take = 1.0
            feeds = refusing_feeds_opponent(S, i, player)
            margin = take_margin(hand, meld, S[i, FACE], live, opp_meld, opp_size, feeds)
            if margin == np.inf:
                take_edge = 1.0
            else:
                take_edge = min(max(margin / 4.0, -1.0), 1.0)
            if not single:
                action = TAKE if margin >= 0 else REFUSE
        elif not single:
            action = greedy_action(S, i)
        if action >= 0:
            out[F_GREEDY + action] = 1.0
    out[F_SCALARS] = take_edge
    out[F_SCALARS + 1] = can_take
    out[F_SCALARS + 2] = (20.0 if 20.0 < value else value) / 20.0
    out[F_SCALARS + 3] = min(_popcount(outs), 10) / 10.0


# ---------------------------------------------------------------- batch loops
@njit(cache=True)
def greedy_actions_serial(S, rows, out):
    for k in range(rows.shape[0]):
        out[k] = greedy_action(S, rows[k])


@njit(cache=True, parallel=True)
def greedy_actions_parallel(S, rows, out):
    for k in prange(rows.shape[0]):
        out[k] = greedy_action(S, rows[k])


@njit(cache=True)
def features_serial(S, rows, players, out):
    for k in range(rows.shape[0]):
        encode_features(S, rows[k], players[k], out[k])


@njit(cache=True, parallel=True)
def features_parallel(S, rows, players, out):
    for k in prange(rows.shape[0]):
        encode_features(S, rows[k], players[k], out[k])


#: what the kernels compile in from other files: the weights and feature slots above, and
#: the size and modification time of the modules whose compiled code is linked in
#: (the meld kernels and their tables)
BAKED = np.array(
    [
        PARTIAL_WEIGHT,
        DISTANT_WEIGHT,
        READY_BONUS,
        OUT_WEIGHT,
        FEED_PENALTY,
        FEED_PENALTY_NEAR_OUT,
        FORCE_MIN_HAND,
        LAY_COST,
        MAX_FULL_ENUM,
        F_LIVE,
        F_FIT_OWN,
        F_FIT_OPP,
        F_QUALITY,
        F_COMBINES,
        F_OUTS,
        F_DISCARD,
        F_PLAN,
        F_GREEDY,
        F_SCALARS,
        NUM_FEATURES,
    ],
    dtype=np.float64,
)
SOURCE_STAMPS = np.array(
    [v for m in (_engine, _melds) for v in (os.stat(m.__file__).st_size, os.stat(m.__file__).st_mtime_ns)],
    dtype=np.int64,
)


@njit(cache=True)
def _baked():
    """The module globals as compiled into the on-disk cache (see :func:`_check_cache`)."""
    return BAKED.copy(), SOURCE_STAMPS.copy(), PARTNERS.copy(), PARTNER_COUNT.copy(), NEIGHBOURS.copy()


def _expected() -> tuple[np.ndarray, ...]:
    return BAKED, SOURCE_STAMPS, PARTNERS, PARTNER_COUNT, NEIGHBOURS


def _check_cache() -> None:
    """numba's cache keeps the globals a kernel was compiled with (and the code of the
    kernels it calls) and is invalidated only when this file changes; if agents.greedy.greedy or
    agents.scorer.features changed a weight or a table since, or conquian_env.kernels / melds
    changed, empty every kernel's cache index here so that each compiles afresh."""
    if all(np.array_equal(a, b) for a, b in zip(_baked(), _expected(), strict=True)):
        return
    flush_caches(globals())
    _baked.recompile()  # the check itself ran the stale cached code in this process


prepare_kernels(globals())
_check_cache()


# ---------------------------------------------------------------- Python API
#: at and above this many rows the batch kernels run on all cores (numba prange)
PARALLEL_MIN_ROWS = 256


def _state_and_rows(games: Any, rows: Any) -> tuple[np.ndarray, np.ndarray]:
    S = getattr(games, "state", games)
    if not isinstance(S, np.ndarray) or S.dtype != np.int64 or S.ndim != 2 or S.shape[1] != NUM_COLUMNS:
        raise ValueError(f"games must be a VectorGame (or its (N, {NUM_COLUMNS}) int64 state array)")
    S = np.ascontiguousarray(S)
    n = S.shape[0]
    if rows is None:
        return S, np.arange(n, dtype=np.int64)
    r = np.asarray(rows)
    if r.ndim == 1 and r.size == 0:
        return S, np.zeros(0, dtype=np.int64)
    if r.ndim != 1 or not (np.issubdtype(r.dtype, np.integer) and r.dtype != np.bool_):
        raise ValueError(f"rows must be a 1-d integer array of game indexes, got {r.dtype} {r.shape}")
    r = r.astype(np.int64)
    if r.size and (r.min() < 0 or r.max() >= n):
        raise ValueError(f"rows must be game indexes in 0..{n - 1}")
    return S, r


def greedy_actions(games: Any, rows: Any = None) -> np.ndarray:
    """The greedy bot's action (``GreedyAgent.choose``) for the player to move in each of
    ``rows`` of ``games`` (a VectorGame; default: every game); -1 for a finished game."""
    S, r = _state_and_rows(games, rows)
    out = np.empty(len(r), dtype=np.int64)
    if len(r) >= PARALLEL_MIN_ROWS:
        greedy_actions_parallel(S, r, out)
    else:
        greedy_actions_serial(S, r, out)
    return out


def batch_features(games: Any, rows: Any = None, players: Any = None) -> np.ndarray:
    """``FeatureEncoder().encode(game, player)`` for each of ``rows`` (default: every game),
    as a float32 array of shape ``(len(rows), FEATURE_SIZE)``; the greedy choice in it is
    :func:`greedy_actions`'.  ``players``: one per row (0 or 1; default: the player to move,
    column PLAYER, which in a finished game is the player who moved last)."""
    S, r = _state_and_rows(games, rows)
    if players is None:
        pl = S[r, PLAYER].astype(np.int64)
    else:
        pl = np.asarray(players)
        if pl.shape != r.shape or not (np.issubdtype(pl.dtype, np.integer) and pl.dtype != np.bool_):
            raise ValueError(f"players must be integers, one per row ({len(r)}), got {pl.dtype} {pl.shape}")
        pl = pl.astype(np.int64)
        if ((pl < 0) | (pl > 1)).any():
            raise ValueError("players must be 0 or 1")
    out = np.empty((len(r), NUM_FEATURES), dtype=np.float32)
    if len(r) >= PARALLEL_MIN_ROWS:
        features_parallel(S, r, pl, out)
    else:
        features_serial(S, r, pl, out)
    return out


__all__ = ["batch_features", "greedy_actions", "greedy_action", "encode_features"]
