"""Compiled (numba) kernels of the batched engine: the rules of :mod:`conquian_env.game`
on rows of one ``int64`` array, one row per game.

This module is private: :mod:`conquian_env.vector` is the public face.  It imports numba,
which plain ``import conquian_env`` never does.  Every function here states the same rule
as its scalar twin (named in its docstring); ``tests/test_vector.py`` plays thousands of
games through both engines and compares every mask, observation and result.

Row layout (columns of the state array ``S``; card sets are bit masks as in
:mod:`conquian_env.cards`): the fields of :data:`conquian_env.game.FIELDS` in order, the
legal-move cache before the stock (:data:`conquian_env.vector.ROW_LAYOUT`).  The column
constants below stay literals, as numba's on-disk cache would not see a change in values
computed from another module; ``tests/test_vector.py`` checks them against the table.

======  ===========================================================================
col     contents
======  ===========================================================================
0, 1    hand of player 0 / 1
2, 3    meld of player 0 / 1
4, 5    cards discarded by player 0 / 1
6, 7    cards refused by player 0 / 1
8       dead pile
9       hand cards laid so far in the meld being made
10      face-up card, -1 for none
11      its source (TURNED 0 / DISCARDED 1)
12      its owner (who turned or discarded it)
13      passed: a turned card already refused by its turner
14      player to decide
15      phase (OFFER, MELD, DISCARD, FORCE_DECISION, GAME_OVER as in game.py)
16      winner, -1 for none or a draw
17      forced: the current take was forced
18      forcing variant on
19      number of decisions played
20      stock position (cards turned so far)
21      legal card choices: meld ids (MELD phase) or discard cards (DISCARD phase)
22      legal other actions: bit k is action 80 + k (take, refuse, finish, force, no force)
23-42   the stock, top first
======  ===========================================================================
"""

from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

# numba's OpenMP threading layer shares GNU OpenMP with torch: in a process that imported
# torch, each parallel launch here then waited milliseconds on spinning torch threads (the
# opponent loop of the vector envs ran 7x slower).  The workqueue layer has no such
# contention; a threading layer the user chose (NUMBA_THREADING_LAYER) is kept.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"

from .melds import _SET_CHOICES, _SHORT

# columns
H0, H1, M0, M1, DI0, DI1, RF0, RF1 = 0, 1, 2, 3, 4, 5, 6, 7
DEAD, CHOSEN, FACE, SOURCE, OWNER, PASSED, PLAYER, PHASE = 8, 9, 10, 11, 12, 13, 14, 15
WINNER, FORCED, FORCING, MOVES, SPOS, LCARDS, LMISC, STOCK0 = 16, 17, 18, 19, 20, 21, 22, 23
NUM_COLUMNS = STOCK0 + 20

# phases, sources and sizes (the values of conquian_env.game, checked by the tests)
OFFER, MELD, DISCARD, FORCE_DECISION, GAME_OVER = 0, 1, 2, 3, 4
TURNED, DISCARDED = 0, 1
STOCK_SIZE = 20
# action ids (conquian_env.actions)
DISCARD_BASE, TAKE, REFUSE, FINISH, FORCE, NO_FORCE, NUM_ACTIONS = 40, 80, 81, 82, 83, 84, 85
# observation slots (conquian_env.observation.OBS_LAYOUT, checked by the tests)
OBS_SIZE = 456
O_OWN_MELD, O_OPP_MELD, O_FACE, O_DEAD, O_PENDING = 40, 80, 120, 160, 200
O_OPP_DISC, O_OPP_REF, O_OWN_DISC, O_OWN_REF = 240, 280, 320, 360
O_STOCK, O_OWN_SIZE, O_OPP_SIZE, O_PHASE, O_SOURCE = 400, 420, 431, 442, 448
O_PASSED, O_FORCED, O_FORCING = 453, 454, 455

SHORT = np.array(_SHORT, dtype=np.int64)
SET_CHOICES = np.zeros((16, 5), dtype=np.int64)
SET_COUNT = np.zeros(16, dtype=np.int64)
for _p, _choices in enumerate(_SET_CHOICES):
    SET_COUNT[_p] = len(_choices)
    for _j, _c in enumerate(_choices):
        SET_CHOICES[_p, _j] = _c


# ---------------------------------------------------------------- meld logic (melds.py)
@njit(cache=True, inline="always")
def popcount(x):
    """Number of set bits of a card mask (``0 <= x < 2**62``), by shifts and adds.

    Not the classic final multiply by 0x0101...: it overflows int64, which LLVM may treat
    as impossible (numba marks integer multiplies ``nsw``) once the function is inlined,
    and then folds comparisons of the count wrongly (seen with numba 0.68.1: ``n <= 7``
    false for a six-card mask with cards above index 31).
    """
    x = x - ((x >> 1) & 0x1555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    x = x + (x >> 8)
    x = x + (x >> 16)
    x = x + (x >> 32)
    return x & 0x7F


@njit(cache=True, inline="always")
def lowest_bit_index(x):
    i = 0
    while not (x >> i) & 1:
        i += 1
    return i


@njit(cache=True)
def _search(a0, a1, a2, a3, r0, r1, r2, r3, ranks):
    """melds._search: try every set choice for the ranks of the bit mask ``ranks``."""
    if ranks == 0:
        return (SHORT[a0] & r0) | (SHORT[a1] & r1) | (SHORT[a2] & r2) | (SHORT[a3] & r3) == 0
    rank = lowest_bit_index(ranks)
    rest = ranks & (ranks - 1)
    if _search(a0, a1, a2, a3, r0, r1, r2, r3, rest):
        return True
    bit = 1 << rank
    present = (a0 >> rank & 1) | (a1 >> rank & 1) << 1 | (a2 >> rank & 1) << 2 | (a3 >> rank & 1) << 3
    needed = (r0 >> rank & 1) | (r1 >> rank & 1) << 1 | (r2 >> rank & 1) << 2 | (r3 >> rank & 1) << 3
    for j in range(SET_COUNT[present]):
        choice = SET_CHOICES[present, j]
        if choice & needed == 0:
            continue
        b0, b1, b2, b3 = a0, a1, a2, a3
        q0, q1, q2, q3 = r0, r1, r2, r3
        if choice & 1:
            b0 &= ~bit
            q0 &= ~bit
        if choice & 2:
            b1 &= ~bit
            q1 &= ~bit
        if choice & 4:
            b2 &= ~bit
            q2 &= ~bit
        if choice & 8:
            b3 &= ~bit
            q3 &= ~bit
        if _search(b0, b1, b2, b3, q0, q1, q2, q3, rest):
            return True
    return False


@njit(cache=True)
def can_extend(required, optional):
    """melds.can_extend_to_meld: a valid meld holds ``required`` and only ``optional`` besides."""
    optional &= ~required
    union = required | optional
    a0, a1, a2, a3 = union & 1023, union >> 10 & 1023, union >> 20 & 1023, union >> 30 & 1023
    r0, r1, r2, r3 = required & 1023, required >> 10 & 1023, required >> 20 & 1023, required >> 30 & 1023
    stuck = SHORT[a0] & r0 | SHORT[a1] & r1 | SHORT[a2] & r2 | SHORT[a3] & r3
    if stuck == 0:
        return True
    set_ranks = (a0 & a1 & (a2 | a3) | (a0 | a1) & a2 & a3) & (r0 | r1 | r2 | r3)
    if stuck & ~set_ranks:
        return False
    return _search(a0, a1, a2, a3, r0, r1, r2, r3, set_ranks)


@njit(cache=True, inline="always")
def can_split(cards):
    """melds.can_split_into_melds."""
    return can_extend(cards, 0)


@njit(cache=True)
def playable(required, optional):
    """melds.playable_cards: cards of ``optional`` that lie in some valid meld holding ``required``."""
    optional &= ~required
    if not can_extend(required, optional):
        return 0
    result = 0
    rest = optional
    while rest:
        low = rest & -rest
        rest ^= low
        if can_extend(required | low, optional & ~low):
            result |= low
    return result


# ---------------------------------------------------------------- the rules (game.py)
@njit(cache=True)
def compute_legal(S, i):
    """GameState._compute_mask, stored in columns LCARDS / LMISC."""
    phase = S[i, PHASE]
    p = S[i, PLAYER]
    cards = 0
    misc = 0
    if phase == OFFER:
        misc = 2  # refuse
        if can_extend(S[i, M0 + p] | 1 << S[i, FACE], S[i, H0 + p]):
            misc |= 1  # take
    elif phase == MELD:
        base = S[i, M0 + p] | 1 << S[i, FACE] | S[i, CHOSEN]
        cards = playable(base, S[i, H0 + p] & ~S[i, CHOSEN])
        if can_split(base):
            misc = 4  # finish
    elif phase == DISCARD:
        cards = S[i, H0 + p]
    elif phase == FORCE_DECISION:
        misc = 8 | 16
    S[i, LCARDS] = cards
    S[i, LMISC] = misc


@njit(cache=True, inline="always")
def is_legal(S, i, a):
    phase = S[i, PHASE]
    if a < 0 or a >= NUM_ACTIONS:
        return False
    if a < DISCARD_BASE:
        return phase == MELD and (S[i, LCARDS] >> a) & 1 == 1
    if a < TAKE:
        return phase == DISCARD and (S[i, LCARDS] >> (a - DISCARD_BASE)) & 1 == 1
    return (S[i, LMISC] >> (a - TAKE)) & 1 == 1


@njit(cache=True)
def num_legal(S, i):
    return popcount(S[i, LCARDS]) + popcount(S[i, LMISC])


@njit(cache=True)
def nth_legal(S, i, k):
    """The ``k``-th legal action id in ascending order (as ``GameState.legal_actions()[k]``)."""
    phase = S[i, PHASE]
    cards = S[i, LCARDS]
    n = popcount(cards)
    if k < n:
        for _ in range(k):
            cards &= cards - 1
        c = lowest_bit_index(cards)
        return c if phase == MELD else DISCARD_BASE + c
    misc = S[i, LMISC]
    for _ in range(k - n):
        misc &= misc - 1
    return TAKE + lowest_bit_index(misc)


@njit(cache=True)
def _turn(S, i, p):
    spos = S[i, SPOS]
    S[i, FACE] = S[i, STOCK0 + spos]
    S[i, SPOS] = spos + 1
    S[i, SOURCE] = TURNED
    S[i, OWNER] = p
    S[i, PASSED] = 0
    S[i, PLAYER] = p
    S[i, PHASE] = OFFER


@njit(cache=True)
def _after_refusal(S, i, p):
    if S[i, SOURCE] == TURNED and S[i, OWNER] == p and S[i, PASSED] == 0:
        S[i, PASSED] = 1
        S[i, PLAYER] = 1 - p
        S[i, PHASE] = OFFER
        return
    S[i, DEAD] |= 1 << S[i, FACE]
    if S[i, SPOS] >= STOCK_SIZE:
        S[i, FACE] = -1
        S[i, WINNER] = -1
        S[i, PHASE] = GAME_OVER
        return
    _turn(S, i, p)


@njit(cache=True)
def apply(S, i, a):
    """GameState.apply for a legal action ``a`` (the caller checks legality)."""
    S[i, MOVES] += 1
    p = S[i, PLAYER]
    if a == REFUSE:
        bit = 1 << S[i, FACE]
        S[i, RF0 + p] |= bit
        if S[i, FORCING] and can_split(S[i, M0 + p] | bit):
            S[i, PLAYER] = 1 - p
            S[i, PHASE] = FORCE_DECISION
        else:
            _after_refusal(S, i, p)
    elif a == TAKE:
        S[i, PHASE] = MELD
        S[i, CHOSEN] = 0
        S[i, FORCED] = 0
    elif a < DISCARD_BASE:
        S[i, CHOSEN] |= 1 << a
    elif a == FINISH:
        chosen = S[i, CHOSEN]
        hand = S[i, H0 + p] & ~chosen
        S[i, M0 + p] |= 1 << S[i, FACE] | chosen
        S[i, H0 + p] = hand
        S[i, CHOSEN] = 0
        S[i, FACE] = -1
        if hand:
            S[i, PHASE] = DISCARD
        else:
            S[i, WINNER] = p
            S[i, PHASE] = GAME_OVER
    elif a < TAKE:
        card = a - DISCARD_BASE
        bit = 1 << card
        S[i, H0 + p] &= ~bit
        S[i, DI0 + p] |= bit
        S[i, FACE] = card
        S[i, SOURCE] = DISCARDED
        S[i, OWNER] = p
        S[i, PASSED] = 0
        S[i, PLAYER] = 1 - p
        S[i, PHASE] = OFFER
    elif a == FORCE:
        S[i, PLAYER] = 1 - p
        S[i, PHASE] = MELD
        S[i, CHOSEN] = 0
        S[i, FORCED] = 1
    else:  # NO_FORCE
        _after_refusal(S, i, 1 - p)
    compute_legal(S, i)


@njit(cache=True)
def forfeit(S, i, loser):
    """GameState.forfeit: the game ends at once with ``loser`` losing."""
    S[i, WINNER] = 1 - loser
    S[i, PHASE] = GAME_OVER
    S[i, CHOSEN] = 0
    S[i, LCARDS] = 0
    S[i, LMISC] = 0


@njit(cache=True)
def start(S, i, deal, first, forcing):
    """new_game from a permutation of the 40 cards (game.shuffled_deal's order): cards
    0..19 dealt one at a time starting with player 0, 20..39 the stock top first."""
    for c in range(NUM_COLUMNS):
        S[i, c] = 0
    for k in range(20):
        S[i, H0 + (k & 1)] |= 1 << deal[k]
    for k in range(20):
        S[i, STOCK0 + k] = deal[20 + k]
    S[i, WINNER] = -1
    S[i, FACE] = -1
    S[i, FORCING] = forcing
    _turn(S, i, first)
    compute_legal(S, i)


# ---------------------------------------------------------------- observations (observation.py)
@njit(cache=True, inline="always")
def _put(out, at, cards):
    while cards:
        low = cards & -cards
        cards ^= low
        out[at + lowest_bit_index(low)] = 1


@njit(cache=True)
def encode(S, i, pl, out):
    """observation.encode of player ``pl`` into the int8 row ``out`` (length OBS_SIZE)."""
    for k in range(OBS_SIZE):
        out[k] = 0
    opp = 1 - pl
    _put(out, 0, S[i, H0 + pl])
    _put(out, O_OWN_MELD, S[i, M0 + pl])
    _put(out, O_OPP_MELD, S[i, M0 + opp])
    _put(out, O_DEAD, S[i, DEAD])
    _put(out, O_PENDING, S[i, CHOSEN])
    _put(out, O_OPP_DISC, S[i, DI0 + opp])
    _put(out, O_OPP_REF, S[i, RF0 + opp])
    _put(out, O_OWN_DISC, S[i, DI0 + pl])
    _put(out, O_OWN_REF, S[i, RF0 + pl])
    for k in range(STOCK_SIZE - S[i, SPOS]):
        out[O_STOCK + k] = 1
    out[O_OWN_SIZE + popcount(S[i, H0 + pl])] = 1
    out[O_OPP_SIZE + popcount(S[i, H0 + opp])] = 1
    phase = S[i, PHASE]
    if phase == GAME_OVER:
        out[O_PHASE + 5] = 1
    elif S[i, PLAYER] != pl:
        out[O_PHASE + 4] = 1
    else:
        out[O_PHASE + phase] = 1
    face = S[i, FACE]
    if face >= 0:
        out[O_FACE + face] = 1
        src = 1 + (1 if S[i, OWNER] != pl else 0) + (2 if S[i, SOURCE] == DISCARDED else 0)
        out[O_SOURCE + src] = 1
        if S[i, PASSED]:
            out[O_PASSED] = 1
    else:
        out[O_SOURCE] = 1
    if S[i, FORCED] and phase == MELD:
        out[O_FORCED] = 1
    if S[i, FORCING]:
        out[O_FORCING] = 1


@njit(cache=True)
def encode_mask(S, i, pl, out):
    """observation.action_mask of player ``pl`` into the row ``out`` (length 85)."""
    for k in range(NUM_ACTIONS):
        out[k] = 0
    if S[i, PLAYER] != pl or S[i, PHASE] == GAME_OVER:
        return
    if S[i, PHASE] == MELD:
        _put(out, 0, S[i, LCARDS])
    elif S[i, PHASE] == DISCARD:
        _put(out, DISCARD_BASE, S[i, LCARDS])
    _put(out, TAKE, S[i, LMISC])


# ---------------------------------------------------------------- batch loops
@njit(cache=True)
def _step_one(S, i, a, status):
    """Play action ``a`` in game ``i``; status[i]: 0 played, 1 illegal (the player forfeits;
    ``VectorGame`` checks first in its "raise" mode), 2 left as it is (``a`` is -1)."""
    if a == -1:
        status[i] = 2
    elif is_legal(S, i, a):
        apply(S, i, a)
        status[i] = 0
    else:
        status[i] = 1
        forfeit(S, i, S[i, PLAYER])


@njit(cache=True)
def step_serial(S, actions, status):
    for i in range(S.shape[0]):
        _step_one(S, i, actions[i], status)


@njit(cache=True, parallel=True)
def step_parallel(S, actions, status):
    for i in prange(S.shape[0]):
        _step_one(S, i, actions[i], status)


@njit(cache=True)
def check_actions(S, actions):
    """Index of the first game whose action is illegal, or -1 (nothing is changed)."""
    for i in range(S.shape[0]):
        if actions[i] != -1 and not is_legal(S, i, actions[i]):
            return i
    return -1


@njit(cache=True)
def start_games(S, rows, deals, first, forcing):
    for k in range(rows.shape[0]):
        start(S, rows[k], deals[k], first[k], forcing)


@njit(cache=True)
def _observe_one(S, i, players, obs, masks):
    pl = players[i]
    if pl < 0:
        pl = S[i, PLAYER]
    encode(S, i, pl, obs[i])
    encode_mask(S, i, pl, masks[i])


@njit(cache=True)
def observe_serial(S, players, obs, masks):
    for i in range(S.shape[0]):
        _observe_one(S, i, players, obs, masks)


@njit(cache=True, parallel=True)
def observe_parallel(S, players, obs, masks):
    for i in prange(S.shape[0]):
        _observe_one(S, i, players, obs, masks)


@njit(cache=True)
def observe_rows(S, rows, players, obs, masks):
    """Observation and mask of ``players[k]`` in game ``rows[k]`` into ``obs[k]`` / ``masks[k]``."""
    for k in range(rows.shape[0]):
        encode(S, rows[k], players[k], obs[k])
        encode_mask(S, rows[k], players[k], masks[k])


@njit(cache=True)
def masks_rows(S, rows, players, masks):
    for k in range(rows.shape[0]):
        encode_mask(S, rows[k], players[k], masks[k])


@njit(cache=True)
def masks_only(S, players, masks):
    for i in range(S.shape[0]):
        pl = players[i]
        if pl < 0:
            pl = S[i, PLAYER]
        encode_mask(S, i, pl, masks[i])


@njit(cache=True)
def random_legal(S, i, u):
    """The legal action of game ``i`` picked by ``u`` (uniform in [0, 1)), uniformly; -1 when over."""
    n = num_legal(S, i)
    if n == 0:
        return -1
    k = int(u * n)
    return nth_legal(S, i, k if k < n else n - 1)


@njit(cache=True)
def random_actions(S, rows, u, out):
    """A uniformly random legal action in each game of ``rows`` (``u``: uniform floats in
    [0, 1)); -1 in a finished game."""
    for k in range(rows.shape[0]):
        out[k] = random_legal(S, rows[k], u[k])


@njit(cache=True, parallel=True)
def play_random_parallel(S, seeds, decisions):
    """Random legal play in every game until ``decisions`` decisions per game are played,
    restarting finished games from fresh shuffles (numba's generator seeded per game).
    Returns the number of finished games per row.  The raw-engine benchmark."""
    n = S.shape[0]
    finished = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        np.random.seed(seeds[i])
        deal = np.arange(40)
        for _ in range(decisions):
            if S[i, PHASE] == GAME_OVER:
                np.random.shuffle(deal)
                start(S, i, deal, 0, S[i, FORCING])
                finished[i] += 1
            apply(S, i, random_legal(S, i, np.random.random()))
    return finished
