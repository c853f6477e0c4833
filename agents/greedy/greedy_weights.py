"""The greedy bot's weights and card tables, in one place.

:mod:`agents.greedy.greedy` (the bot), its compiled twin :mod:`agents.greedy.greedy_kernels` and its JAX twin
:mod:`agents.greedy.greedy_jax` read them from here, the one home all three import.  What each
weight means is in :mod:`agents.greedy.greedy`'s docstring.
"""

from conquian_env.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS

#: quality of a card per 3-card combination it could still make, with one partner held
#: (and the other live) or with both partners live
PARTIAL_WEIGHT = 0.3
DISTANT_WEIGHT = 0.06
#: a ready hand: this bonus plus OUT_WEIGHT per card that would win
READY_BONUS = 2.0
OUT_WEIGHT = 0.5
#: penalty for discarding a card that fits the opponent's meld, by opponent hand size
FEED_PENALTY = 0.7
FEED_PENALTY_NEAR_OUT = 6.0
#: force the opponent when they hold at least this many hand cards
FORCE_MIN_HAND = 2
#: small preference for laying fewer cards when plans are otherwise equal
LAY_COST = 1e-3
#: the most playable hand cards whose subsets are all tried when planning a take
MAX_FULL_ENUM = 7


def _make_partner_table() -> tuple[tuple[int, ...], ...]:
    """For each card, the masks of the two other cards of every 3-card set or run holding it."""
    table = []
    for card in range(NUM_CARDS):
        suit, rank = divmod(card, NUM_RANKS)
        pairs = []
        others = [s for s in range(NUM_SUITS) if s != suit]
        for i in range(len(others)):
            for j in range(i + 1, len(others)):
                pairs.append(1 << (others[i] * NUM_RANKS + rank) | 1 << (others[j] * NUM_RANKS + rank))
        for lo in (rank - 2, rank - 1, rank):
            if 0 <= lo and lo + 2 < NUM_RANKS:
                run = sum(1 << (suit * NUM_RANKS + r) for r in range(lo, lo + 3))
                pairs.append(run & ~(1 << card))
        table.append(tuple(pairs))
    return tuple(table)


def _make_neighbour_table() -> tuple[int, ...]:
    """For each card, the cards that could share a 3-card combination with it."""
    table = []
    for pairs in PARTNERS:
        mask = 0
        for m in pairs:
            mask |= m
        table.append(mask)
    return tuple(table)


#: ``PARTNERS[c]``: partner masks (two cards each) of the 3-card combinations holding ``c``
PARTNERS = _make_partner_table()
#: ``NEIGHBOURS[c]``: union of ``PARTNERS[c]``
NEIGHBOURS = _make_neighbour_table()


__all__ = [
    "DISTANT_WEIGHT",
    "FEED_PENALTY",
    "FEED_PENALTY_NEAR_OUT",
    "FORCE_MIN_HAND",
    "LAY_COST",
    "MAX_FULL_ENUM",
    "NEIGHBOURS",
    "OUT_WEIGHT",
    "PARTIAL_WEIGHT",
    "PARTNERS",
    "READY_BONUS",
]
