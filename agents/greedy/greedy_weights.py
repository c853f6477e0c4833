"""The greedy bot's weights and card tables, in one place.

:mod:`agents.greedy.greedy` (the bot), its compiled twin :mod:`agents.greedy.greedy_kernels` and its JAX twin
:mod:`agents.greedy.greedy_jax` read them from here, the one home all three import.  What each
weight means is in :mod:`agents.greedy.greedy`'s docstring.
"""

from conquian_env.melds import NEIGHBOURS, PARTNERS  # the card tables of 3-card combinations, the rules' own

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
