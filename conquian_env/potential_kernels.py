"""The compiled twin of :func:`conquian_env.potential.potential_masks` on the batched engine's rows.

The card tables come in as arguments (numba freezes a module global into its on-disk cache);
``tests/test_potential.py`` holds the kernel equal to the Python encoder on random positions.
"""

from __future__ import annotations

from numba import njit

from .compiling import prepare_kernels, setup

setup(__file__)  # numba's cache folder and compile notice, before any kernel is defined

from .kernels import (  # noqa: E402
    CHOSEN,
    DEAD,
    DISCARD,
    FACE,
    H0,
    M0,
    M1,
    PHASE,
    PLAYER,
    can_split,
    lowest_bit_index,
    popcount,
)

_FULL = (1 << 40) - 1


@njit(cache=True, inline="always")
def _put(out, k, at, cards):  # pragma: no cover - compiled
    while cards:
        low = cards & -cards
        cards ^= low
        out[k, at + lowest_bit_index(low)] = 1


@njit(cache=True, inline="always")
def neighbours_of(mask, neighbours):  # pragma: no cover - compiled
    """The union of ``neighbours[c]`` over the cards of ``mask`` (:func:`conquian_env.melds.neighbours_of`)."""
    near = 0
    while mask:
        low = mask & -mask
        mask ^= low
        near |= neighbours[lowest_bit_index(low)]
    return near


@njit(cache=True)
def fits(meld, candidates, neighbours):  # pragma: no cover - compiled
    """The cards of ``candidates`` that extend ``meld`` alone into a valid meld
    (:func:`conquian_env.melds.meld_fits`; the greedy kernels' ``"meld"`` features call it too)."""
    if not meld:
        return 0
    out = 0
    while candidates:
        low = candidates & -candidates
        candidates ^= low
        if meld & neighbours[lowest_bit_index(low)] and can_split(meld | low):
            out |= low
    return out


@njit(cache=True)
def winning_cards(hand, meld, live, candidates):  # pragma: no cover - compiled
    """The cards of ``candidates & live`` with which ``hand | meld`` would split into melds
    (:func:`conquian_env.melds.winning_cards`; pass ``neighbours_of(hand | meld, ...)`` for its default)."""
    held = hand | meld
    rest = candidates & live & ~held
    outs = 0
    while rest:
        low = rest & -rest
        rest ^= low
        if can_split(held | low):
            outs |= low
    return outs


@njit(cache=True)
def hand_status(hand, meld, live, partners, counts, neighbours):  # pragma: no cover - compiled
    """(complete, partial): the hand cards in a 3-card set or run with held cards (or extending the
    meld), and the other hand cards with one partner held and the other live."""
    held = hand | meld
    complete = 0
    partial = 0
    cards = hand
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        done = (meld & neighbours[c]) != 0 and can_split(meld | low)
        part = False
        rest = held & ~low
        for q in range(counts[c]):
            if done:
                break
            pm = partners[c, q]
            have = pm & rest
            if have == pm:
                done = pm & meld == 0 or can_split(meld | low | pm)
            elif have and pm & ~rest & live:
                part = True
        if done:
            complete |= low
        elif part:
            partial |= low
    return complete, partial


@njit(cache=True)
def combining(hand, outside, live, partners, counts, neighbours):  # pragma: no cover - compiled
    """(combines, near): the ``outside`` cards making a 3-card set or run with two hand cards, and the
    other ``outside`` cards with one partner in the hand and the other live."""
    combines = 0
    near = 0
    cards = outside & neighbours_of(hand, neighbours)
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        full = False
        part = False
        for q in range(counts[c]):
            pm = partners[c, q]
            have = pm & hand
            if have == pm:
                full = True
                break
            if have and pm & ~hand & live:
                part = True
        if full:
            combines |= low
        elif part:
            near |= low
    return combines, near


#: the planes' count (:data:`conquian_env.potential.PLANES`)
NUM_PLANES = 17


@njit(cache=True)
def _row(S, i, player, out, k, base, partners, counts, neighbours):  # pragma: no cover - compiled
    for j in range(NUM_PLANES * 40):
        out[k, base + j] = 0
    hand, meld, opp_meld = S[i, H0 + player], S[i, M0 + player], S[i, M0 + 1 - player]
    seen = hand | S[i, M0] | S[i, M1] | S[i, DEAD] | S[i, CHOSEN]
    if S[i, FACE] >= 0:
        seen |= 1 << S[i, FACE]
    live = _FULL & ~seen
    held = hand | meld
    outside = ~held & _FULL
    _put(out, k, base, live)
    _put(out, k, base + 40, fits(meld, outside, neighbours))
    _put(out, k, base + 80, fits(opp_meld, outside & ~opp_meld, neighbours))
    complete, partial = hand_status(hand, meld, live, partners, counts, neighbours)
    _put(out, k, base + 120, complete)
    _put(out, k, base + 160, partial)
    combines, near = combining(hand, outside, live, partners, counts, neighbours)
    _put(out, k, base + 200, combines)
    _put(out, k, base + 240, near)
    if hand:
        _put(out, k, base + 280, winning_cards(held, 0, live, neighbours_of(held, neighbours)))
    for c in range(40):
        for q in range(counts[c]):
            if partners[c, q] & live == partners[c, q]:
                out[k, base + 320 + c] = 1
                break
    cards = hand if S[i, PHASE] == DISCARD and S[i, PLAYER] == player else 0
    while cards:
        low = cards & -cards
        cards ^= low
        c = lowest_bit_index(low)
        left = hand & ~low
        outs = popcount(winning_cards(held & ~low, 0, live, neighbours_of(held & ~low, neighbours)))
        complete2, partial2 = hand_status(left, meld, live, partners, counts, neighbours)
        combines2, near2 = combining(left, outside | low, live, partners, counts, neighbours)
        facts = (outs >= 1, outs >= 3, outs >= 2, outs >= 5, complete2 == complete & ~low,
                 (complete | partial) & ~low & ~(complete2 | partial2) == 0, combines2 & ~low == combines,
                 near2 & ~low == near)  # fmt: skip
        for f in range(8):
            if facts[f]:
                out[k, base + 360 + 40 * f + c] = 1


@njit(cache=True, nogil=True)
def planes(S, rows, players, out, base, partners, counts, neighbours):  # pragma: no cover - compiled
    """The planes of ``players[k]`` in game ``rows[k]`` into ``out[k, base:base + 680]``."""
    for k in range(len(rows)):
        _row(S, rows[k], players[k], out, k, base, partners, counts, neighbours)


prepare_kernels(globals())
