"""Compiled (numba) search: determinized Monte Carlo with paired greedy playouts, all in
compiled code (the private half of :mod:`agents.search.pimc`).

One search answers one decision of one player from what that player sees: a *view row*
(a row of the batched engine, :mod:`conquian_env.kernels`, whose opponent hand and stock
hold nothing) and the *pool* of cards the player cannot see, sorted.  Each determinization
deals the pool at random into the opponent's hidden hand and the stock (the most
plausible of ``tries`` deals, judged by :func:`implausibility` as the Python search's
``infer`` judges them), then every root action still in the race is played on a copy of
that same deal and followed by the greedy rules for both players to the end of the game
(:func:`agents.greedy.greedy_kernels.greedy_action`).  The actions are compared on the same
cards (common random numbers), and after every ``RACE_EVERY`` deals an action whose
paired mean loss against the leader exceeds ``z`` standard errors leaves the race, so the
playouts go to the actions still in doubt.

The state of a search lives in arrays the caller keeps (:func:`new_search` makes them), held
with the position and the knobs in one record (:class:`Search`), so that a search can run in
chunks (:func:`run_search`) between which Python looks at the clock.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from conquian_env.compiling import prepare_kernels, setup
from conquian_env.kernels import (
    CHOSEN,
    DEAD,
    DI0,
    DISCARD,
    DISCARD_BASE,
    DISCARDED,
    FACE,
    FINISH,
    FORCED,
    GAME_OVER,
    H0,
    LCARDS,
    LMISC,
    M0,
    M1,
    MELD,
    MOVES,
    NUM_ACTIONS,
    NUM_COLUMNS,
    OFFER,
    OWNER,
    PHASE,
    PLAYER,
    REFUSE,
    RF0,
    SOURCE,
    SPOS,
    STOCK0,
    STOCK_SIZE,
    TAKE,
    WINNER,
    apply,
    can_extend,
    can_split,
    compute_legal,
    lowest_bit_index,
)
from conquian_env.kernels import popcount as _popcount

from ..greedy.greedy_kernels import (
    FULL,
    NEIGHBOURS,
    NUM_FEATURES,
    PARTNER_COUNT,
    PARTNERS,
    choose_discard,
    encode_features,
    feed_penalty,
    greedy_action,
    live_cards,
    plan_take,
    position_value,
    refusing_feeds_opponent,
)
from ..scorer.scorer_kernels import candidates
from .belief_kernels import deal_from_belief, lay_deal, shuffle_from

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

#: deals between two checks of the race
RACE_EVERY = 16
#: results are kept per deal (for the paired race) up to this many deals; later deals
#: still count in the sums but no longer change the race
MAX_DEALS = 1 << 16
# columns of the search-state vector (``info``)
I_DEALS, I_ACTIONS, I_PLAYOUTS, I_RNG, I_GREEDY = 0, 1, 2, 3, 4
INFO_SIZE = 5


# ---------------------------------------------------------------- determinization
#: weight of the opponent's latest discard when greedy would have kept it (a sharper test
#: than the other two: the hand it was chosen from is exactly today's hand and that card)
LATEST_DISCARD_WEIGHT = 2


@njit(cache=True)
def implausibility(row, opp, limit=1 << 30):
    """How much of the opponent's play the hand in ``row`` contradicts (hands only shrink,
    so today's hand was part of the hand they held at each earlier decision):

    * each discarded card that makes a 3-card set or run with two cards of this hand: 1;
    * the opponent's discard now face up, when the greedy rules would have discarded
      another card of this hand plus it (exact: nothing else changed since):
      LATEST_DISCARD_WEIGHT;
    * each refused card (one that did not fit their meld alone) that this hand could
      meld (with today's meld: an approximation, the meld may have grown since): 1.  Not
      greedy's take margin: that test is sharper (deals judged so match the opponent's
      hidden hand better) but costs a take plan per card and deal, and at 50 ms a decision
      the search with it scored 0.556 against 0.568 with this one (the same 1,446 games).

    The count is exact below ``limit``; from ``limit`` on it stops early (cheap checks
    first) and returns some number >= ``limit``.
    """
    me = 1 - opp
    hand = row[H0 + opp] & ~row[CHOSEN]
    meld = row[M0 + opp]
    bad = 0
    discarded = row[DI0 + opp]
    while discarded:
        low = discarded & -discarded
        discarded ^= low
        card = lowest_bit_index(low)
        near = NEIGHBOURS[card] & hand
        if near & (near - 1):
            for j in range(PARTNER_COUNT[card]):
                pm = PARTNERS[card, j]
                if pm & hand == pm:
                    bad += 1
                    break
    if bad >= limit:
        return bad
    my_meld = row[M0 + me]
    my_size = _popcount(row[H0 + me])
    unseen = FULL & ~(hand | row[M0] | row[M1] | row[DEAD])  # what the opponent cannot see
    face = row[FACE]
    if face >= 0 and row[SOURCE] == DISCARDED and row[OWNER] == opp:
        held = hand | 1 << face
        if choose_discard(held, meld, unseen & ~(1 << face), my_meld, my_size)[0] != face:
            bad += LATEST_DISCARD_WEIGHT
            if bad >= limit:
                return bad
    refused = row[RF0 + opp]
    while refused:
        low = refused & -refused
        refused ^= low
        card = lowest_bit_index(low)
        if can_split(meld | low):
            continue
        if NEIGHBOURS[card] & hand and can_extend(meld | low, hand):
            bad += 1
            if bad >= limit:
                return bad
    return bad


@njit(cache=True)
def _deal(view, pool, odds, n_opp, info, out):
    """One deal of ``pool`` into ``out`` (a copy of ``view``): ``n_opp`` cards to the opponent's
    hand, the rest to the stock from the next stock position on; a uniform deal where ``odds``
    is None, else one drawn from the belief (:func:`agents.search.belief_kernels.deal_from_belief`:
    the opponent's hand card by card in proportion to ``odds``)."""
    if odds is None:
        perm = pool.copy()
        shuffle_from(perm, 0, info, I_RNG)
        lay_deal(view, perm, n_opp, out)
    else:
        deal_from_belief(view, pool, odds, n_opp, info, I_RNG, out)


@njit(cache=True)
def determinize(view, pool, odds, n_opp, tries, info, out, scratch):
    """The most plausible of up to ``tries`` deals (:func:`_deal`: uniform where ``odds`` is None,
    else drawn from the belief; None compiles it without the belief) into ``out``: the first with
    no contradiction, else the first with the fewest; ``tries`` <= 1: one deal."""
    _deal(view, pool, odds, n_opp, info, out)
    if tries <= 1:
        return
    opp = 1 - view[PLAYER]
    best = implausibility(out, opp, 1 << 30)  # the limit given: one signature with the call below
    t = 1
    while best > 0 and t < tries:
        _deal(view, pool, odds, n_opp, info, scratch)
        bad = implausibility(scratch, opp, best)
        if bad < best:
            best = bad
            for c in range(NUM_COLUMNS):
                out[c] = scratch[c]
        t += 1


@njit(cache=True)
def filter_frequencies(view, pool, n_opp, tries, seed, deals):
    """How often each card of ``pool`` lands in the opponent's hand over ``deals`` deals of
    :func:`determinize` (the plausibility filter's marginals, estimated: the belief benchmark's)."""
    info = np.zeros(INFO_SIZE, dtype=np.int64)
    info[I_RNG] = seed if seed != 0 else 0x2545F4914F6CDD1D
    out = np.empty(NUM_COLUMNS, dtype=np.int64)
    scratch = np.empty(NUM_COLUMNS, dtype=np.int64)
    counts = np.zeros(pool.shape[0], dtype=np.float64)
    opp = 1 - view[PLAYER]
    for _ in range(deals):
        determinize(view, pool, None, n_opp, tries, info, out, scratch)
        hand = out[H0 + opp]
        for k in range(pool.shape[0]):
            if hand >> pool[k] & 1:
                counts[k] += 1.0
    return counts / deals


# ---------------------------------------------------------------- playouts
#: entries of a playout's plan cache (a power of two); the cache is emptied when full
CACHE_SIZE = 1 << 15
_KEY = 6  # hand, meld, opponent's meld, face-up card, dead pile, opponent's hand size


@njit(cache=True)
def _new_cache(size):
    """An empty plan cache for :func:`playout`: ``(keys, plans, filled)``."""
    keys = np.zeros((size, _KEY), dtype=np.int64)
    plans = np.zeros((size, 4), dtype=np.float64)  # lay, discard, plan value, value of keeping
    filled = np.zeros(1, dtype=np.int64)
    keys[:, 0] = -1  # -1: an empty slot (no hand is -1)
    return keys, plans, filled


def new_cache(size: int = CACHE_SIZE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An empty plan cache for :func:`playout` (``size``: a power of two)."""
    if size < 2 or size & (size - 1):
        raise ValueError(f"the cache size must be a power of two >= 2, got {size!r}")
    return _new_cache(size)


@njit(cache=True)
def _offer_plan(S, i, p, keys, plans, filled):
    """greedy's plan for the card offered to ``p`` in game ``i``: ``(lay, discard, value,
    keep)`` as plan_take and position_value give them, from the cache when it has them (the
    plan is a pure function of the key's six numbers: ``live`` follows from them)."""
    hand, meld, opp_meld = S[i, H0 + p], S[i, M0 + p], S[i, M0 + 1 - p]
    face, dead = S[i, FACE], S[i, DEAD]
    opp_size = _popcount(S[i, H0 + 1 - p])
    h = np.uint64(hand) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(meld) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= np.uint64(opp_meld) * np.uint64(0x165667B19E3779F9)
    h ^= np.uint64(dead) * np.uint64(0xD6E8FEB86659FD93)
    h ^= np.uint64(face * 64 + opp_size) * np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(29)
    mask = keys.shape[0] - 1
    slot = np.int64(h >> np.uint64(1)) & mask
    while keys[slot, 0] != -1:
        if (
            keys[slot, 0] == hand
            and keys[slot, 1] == meld
            and keys[slot, 2] == opp_meld
            and keys[slot, 3] == face
            and keys[slot, 4] == dead
            and keys[slot, 5] == opp_size
        ):
            return np.int64(plans[slot, 0]), np.int64(plans[slot, 1]), plans[slot, 2], plans[slot, 3]
        slot = (slot + 1) & mask
    live = live_cards(S, i, p)
    lay, discard, value = plan_take(hand, meld, face, 0, live, opp_meld, opp_size)
    keep = position_value(hand, meld, live)
    if filled[0] * 2 >= keys.shape[0]:  # half full: start afresh (probes stay short)
        keys[:, 0] = -1
        filled[0] = 0
        slot = np.int64(h >> np.uint64(1)) & mask
    keys[slot, 0], keys[slot, 1], keys[slot, 2] = hand, meld, opp_meld
    keys[slot, 3], keys[slot, 4], keys[slot, 5] = face, dead, opp_size
    plans[slot, 0], plans[slot, 1], plans[slot, 2], plans[slot, 3] = lay, discard, value, keep
    filled[0] += 1
    return lay, discard, value, keep


@njit(cache=True)
def playout(S, i, keys, plans, filled):
    """Play game ``i`` to its end with the greedy rules for both players; the winner (-1 draw).

    The same moves as :func:`greedy_action` at every decision (the tests compare the two
    move for move), with a greedy take played as one step: the offer's plan
    (``plan_take``) already holds the cards to lay and the discard that greedy's meld and
    discard decisions would each compute again, so the meld is laid and the card
    discarded at once.  Plans come from the cache ``keys, plans, filled`` (:func:`new_cache`).
    """
    while S[i, PHASE] != GAME_OVER:
        _greedy_step(S, i, keys, plans, filled)
    return S[i, WINNER]


@njit(cache=True, inline="always")
def _greedy_step(S, i, keys, plans, filled):
    """One greedy decision of :func:`playout` (a take with its meld and discard as one step)."""
    phase = S[i, PHASE]
    if phase == OFFER and S[i, LMISC] & 1:  # an offer the player may take
        p = S[i, PLAYER]
        lay, discard, value, keep = _offer_plan(S, i, p, keys, plans, filled)
        if refusing_feeds_opponent(S, i, p):
            keep -= feed_penalty(S[i, FACE], S[i, M0 + 1 - p], _popcount(S[i, H0 + 1 - p]))
        if value - keep < 0:
            apply(S, i, REFUSE)
            return
        S[i, PHASE] = MELD  # apply(TAKE) without the meld phase's legal masks
        S[i, FORCED] = 0
        S[i, MOVES] += 1
        _lay(S, i, lay, discard)
    elif phase == MELD and S[i, CHOSEN] == 0:  # a forced take, or a take played before
        p = S[i, PLAYER]
        lay, discard, _, _ = _offer_plan(S, i, p, keys, plans, filled)
        _lay(S, i, lay, discard)
    else:
        apply(S, i, greedy_action(S, i))


@njit(cache=True, inline="always")
def _lay(S, i, lay, discard):
    """The rest of a greedy take with nothing chosen yet: lay the plan's cards (one move
    each), finish, and discard the plan's card (greedy's discard decision would choose it:
    the same hand, meld and unseen cards)."""
    S[i, CHOSEN] = lay
    S[i, MOVES] += _popcount(lay)
    apply(S, i, FINISH)
    if S[i, PHASE] == DISCARD:
        apply(S, i, DISCARD_BASE + discard)


@njit(cache=True)
def playout_by_decision(S, i):
    """:func:`playout` one :func:`greedy_action` at a time (the reference the tests compare it with)."""
    while S[i, PHASE] != GAME_OVER:
        apply(S, i, greedy_action(S, i))
    return S[i, WINNER]


# ---------------------------------------------------------------- the search
@njit(cache=True)
def root_actions(view, actions):
    """The legal actions of the player to move in ``view`` into ``actions``, the greedy
    choice first, the rest ascending; returns how many."""
    row = np.empty((1, NUM_COLUMNS), dtype=np.int64)  # not view.reshape: its error path compiles seconds of string code
    for c in range(NUM_COLUMNS):
        row[0, c] = view[c]
    compute_legal(row, 0)
    first = greedy_action(row, 0)
    phase = row[0, PHASE]
    cards, misc = row[0, LCARDS], row[0, LMISC]
    actions[0] = first
    n = 1
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        a = DISCARD_BASE + c if phase == DISCARD else c
        if a != first:
            actions[n] = a
            n += 1
    while misc:
        low = misc & -misc
        misc ^= low
        a = TAKE + lowest_bit_index(low)
        if a != first:
            actions[n] = a
            n += 1
    return n


@njit(cache=True)
def new_search(view, seed):
    """The arrays of a search from ``view``: ``(info, actions, active, results, sums)``."""
    info = np.zeros(INFO_SIZE, dtype=np.int64)
    info[I_RNG] = seed if seed != 0 else 0x2545F4914F6CDD1D
    actions = np.full(NUM_ACTIONS, -1, dtype=np.int64)
    info[I_ACTIONS] = root_actions(view, actions)
    info[I_GREEDY] = actions[0]
    active = np.zeros(NUM_ACTIONS, dtype=np.bool_)
    active[: info[I_ACTIONS]] = True
    results = np.zeros((RACE_EVERY, NUM_ACTIONS), dtype=np.float32)  # half points
    sums = np.zeros((2, NUM_ACTIONS), dtype=np.float64)  # summed score, deals played
    return info, actions, active, results, sums


@njit(cache=True)
def _race(results, deals, active, sums, n, z):
    """Drop from ``active`` every action whose paired mean against the leader is below it
    by more than ``z`` standard errors (scores in half points, over the first ``deals``)."""
    lead = -1
    lead_mean = -1.0
    for k in range(n):
        if active[k] and sums[0, k] / sums[1, k] > lead_mean:
            lead, lead_mean = k, sums[0, k] / sums[1, k]
    for k in range(n):
        if not active[k] or k == lead:
            continue
        s = 0.0
        s2 = 0.0
        for d in range(deals):
            x = float(results[d, lead] - results[d, k])
            s += x
            s2 += x * x
        mean = s / deals
        var = (s2 - s * mean) / (deals - 1)
        if mean > 0 and mean * mean * deals > z * z * max(var, 1e-12):
            active[k] = False


class Search(NamedTuple):
    """One search, as :func:`run_search` takes it: the position searched, the knobs, and the arrays
    it keeps between chunks (numba takes the record as it is: a tuple of arrays and numbers).
    :func:`new_search` makes ``info``, ``actions``, ``active`` and ``sums``; the per-deal results it
    makes too stay out of the record, because :func:`run_search` replaces them by larger ones as
    the deals add up (and returns them)."""

    row: np.ndarray  #: the player's view row (an engine row, the cards the player cannot see left out)
    pool: np.ndarray  #: the cards the player cannot see, sorted
    n_opp: int  #: how many of them the opponent holds
    odds: np.ndarray | None  #: each pool card's odds to be in the opponent's hand; None: uniform deals
    tries: int  #: deals drawn per determinization, the most plausible kept
    z: float  #: standard errors behind the leader at which an action leaves the race (0: never)
    info: np.ndarray  #: deals, actions, playouts, the generator's state, greedy's action (``I_*``)
    actions: np.ndarray  #: the root actions, greedy's first
    active: np.ndarray  #: which of them are still in the race
    sums: np.ndarray  #: per action: summed score (half points), deals played
    S: np.ndarray  #: a one-row engine table the playouts run in
    keys: np.ndarray  #: greedy's plan cache (:func:`new_cache`), pure functions of their keys: kept across searches
    plans: np.ndarray
    filled: np.ndarray


@njit(cache=True)
def run_search(search, results, deals):
    """Play ``deals`` more determinizations of ``search`` (a :class:`Search`; see the module
    docstring) and return the per-deal results (``results``, or a larger copy once the deals
    outgrow it: pass the one returned to the next call).  Where ``search.odds`` is None the deals
    are uniform (the plain search, compiled without the belief), else drawn from the belief
    (:mod:`agents.search.belief_kernels`)."""
    view, pool, n_opp, odds, tries, z = search.row, search.pool, search.n_opp, search.odds, search.tries, search.z
    info, actions, active, sums = search.info, search.actions, search.active, search.sums
    S, keys, plans, filled = search.S, search.keys, search.plans, search.filled
    me = view[PLAYER]
    n = info[I_ACTIONS]
    det = np.empty(NUM_COLUMNS, dtype=np.int64)
    scratch = np.empty(NUM_COLUMNS, dtype=np.int64)
    for _ in range(deals):
        d = info[I_DEALS]
        if d >= results.shape[0] and d < MAX_DEALS:  # grow the per-deal results
            grown = np.zeros((min(2 * results.shape[0], MAX_DEALS), NUM_ACTIONS), dtype=np.float32)
            for r in range(results.shape[0]):  # not a slice assignment: its shape check compiles seconds of strings
                for a in range(NUM_ACTIONS):
                    grown[r, a] = results[r, a]
            results = grown
        determinize(view, pool, odds, n_opp, tries, info, det, scratch)
        for k in range(n):
            if not active[k]:
                continue
            for c in range(NUM_COLUMNS):
                S[0, c] = det[c]
            compute_legal(S, 0)
            apply(S, 0, actions[k])
            w = playout(S, 0, keys, plans, filled)
            half = 1.0 if w < 0 else (2.0 if w == me else 0.0)
            if d < results.shape[0]:
                results[d, k] = half
            sums[0, k] += half
            sums[1, k] += 1.0
            info[I_PLAYOUTS] += 1
        info[I_DEALS] = d + 1
        if z > 0 and (d + 1) % RACE_EVERY == 0 and d + 1 <= results.shape[0]:
            _race(results, d + 1, active, sums, n, z)
    return results


@njit(cache=True)
def best_action(info, actions, active, sums):
    """The action in the race with the best mean score (ties: the earlier one, greedy's first;
    none played out yet: the first one in the race)."""
    best = -1
    best_mean = -1.0
    for k in range(info[I_ACTIONS]):
        if active[k] and sums[1, k] > 0 and sums[0, k] / sums[1, k] > best_mean:
            best, best_mean = k, sums[0, k] / sums[1, k]
    if best < 0:
        best = 0
        for k in range(info[I_ACTIONS] - 1, -1, -1):
            if active[k]:
                best = k
    return actions[best]


@njit(cache=True, parallel=True)
def analyze_batch(views, pools, pool_sizes, n_opps, seeds, tries, z, playouts, values, counts):
    """A search of ``playouts`` playouts from each of ``views`` (row b's pool is
    ``pools[b, :pool_sizes[b]]``; with ``z`` > 0 it ends sooner where the race is won), on all
    cores; ``values[b, a]`` the mean score of action
    ``a`` (win 1, draw 1/2, loss 0; NaN where not legal), ``counts[b, a]`` its playouts;
    returns the action each search chose."""
    B = views.shape[0]
    chosen = np.empty(B, dtype=np.int64)
    for b in prange(B):
        view = views[b]
        info, actions, active, results, sums = new_search(view, seeds[b])
        S = np.empty((1, NUM_COLUMNS), dtype=np.int64)
        keys, plans, filled = _new_cache(CACHE_SIZE)
        search = Search(
            row=view, pool=pools[b, : pool_sizes[b]].copy(), n_opp=n_opps[b], odds=None, tries=tries, z=z,
            info=info, actions=actions, active=active, sums=sums, S=S, keys=keys, plans=plans, filled=filled,
        )  # fmt: skip
        n = info[I_ACTIONS]
        while info[I_PLAYOUTS] < playouts and (z <= 0 or active[:n].sum() > 1):  # z > 0: until the race is won
            results = run_search(search, results, 1)
        for k in range(n):
            a = actions[k]
            if sums[1, k] > 0:
                values[b, a] = 0.5 * sums[0, k] / sums[1, k]
            counts[b, a] = sums[1, k]
        chosen[b] = best_action(info, actions, active, sums)
    return chosen


__all__ = [
    "DISCARD",
    "FACE",
    "DEAD",
    "STOCK_SIZE",
    "analyze_batch",
    "best_action",
    "Search",
    "determinize",
    "filter_frequencies",
    "implausibility",
    "new_search",
    "playout",
    "run_search",
]


# ---------------------------------------------------------------- labels of recorded decisions
@njit(cache=True)
def label_one(row, me, K, redeal_hand, seed, X, acts, Q, F, keys, plans, filled):
    """The value for player ``me`` of each candidate (:func:`agents.scorer.scorer_kernels.candidates`, into
    ``X, acts``) of engine row ``row``, into ``Q``: the mean score (1 a win, 0.5 a draw) of ``K``
    greedy playouts after it, each from the row with the unseen cards drawn again from one set
    (the same ``K`` draws for every candidate): the stock left only, the opponent's true hand kept
    (a label that knows the hand: never a bot's), or with ``redeal_hand`` the opponent's hidden
    cards too (a uniform determinization, as the flat search's).  Returns the candidates' count."""
    np.random.seed(seed)
    S = np.zeros((1, NUM_COLUMNS), np.int64)
    det = np.zeros(NUM_COLUMNS, np.int64)
    for c in range(NUM_COLUMNS):
        S[0, c] = row[c]
    encode_features(S, 0, me, F)
    n = candidates(F, S[0, PHASE], S[0, LCARDS], S[0, LMISC], X, acts)
    for k in range(n):
        Q[k] = 0.0
    opp = 1 - me
    spos = S[0, SPOS]
    hidden = row[H0 + opp] & ~row[CHOSEN] if redeal_hand else 0
    n_opp = _popcount(hidden)
    m = n_opp + STOCK_SIZE - spos
    pool = np.empty(m, np.int64)
    unseen = hidden  # what ``me`` cannot see, as one set: the draws never depend on how it lies in the row
    for q in range(spos, STOCK_SIZE):
        unseen |= 1 << row[STOCK0 + q]
    for _ in range(K):
        j = 0
        rest = unseen
        while rest:
            low = rest & -rest
            rest ^= low
            pool[j] = lowest_bit_index(low)
            j += 1
        for q in range(m - 1, 0, -1):
            r = np.random.randint(q + 1)
            pool[q], pool[r] = pool[r], pool[q]
        for c in range(NUM_COLUMNS):
            det[c] = row[c]
        if redeal_hand:
            hand = 0
            for q in range(n_opp):
                hand |= 1 << pool[q]
            det[H0 + opp] = (row[H0 + opp] & ~hidden) | hand
        for q in range(m - n_opp):
            det[STOCK0 + spos + q] = pool[n_opp + q]
        for k in range(n):
            for c in range(NUM_COLUMNS):
                S[0, c] = det[c]
            compute_legal(S, 0)
            apply(S, 0, acts[k])
            w = playout(S, 0, keys, plans, filled)
            Q[k] += 1.0 if w == me else (0.5 if w < 0 else 0.0)
    for k in range(n):
        Q[k] /= K
    return n


@njit(cache=True, parallel=True)
def label_rows(rows, K, redeal_hand, seed, blocks, Xs, As, Qs, Ns):
    """:func:`label_one` for every row (each its own stream, ``seed + row``: the blocks change nothing)."""
    m = rows.shape[0]
    for b in prange(blocks):
        F = np.zeros(NUM_FEATURES, np.float32)
        keys, plans, filled = _new_cache(CACHE_SIZE)
        for i in range(b, m, blocks):
            Ns[i] = label_one(rows[i], rows[i, PLAYER], K, redeal_hand, seed + i, Xs[i], As[i], Qs[i], F, keys, plans,
                               filled)  # fmt: skip


prepare_kernels(globals())
