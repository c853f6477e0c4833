"""The ``"potential"`` observation: the raw observation followed by seventeen planes of meld potential.

A network on the raw observation must learn from the card planes alone which cards make melds
with which; behaviour cloning measured that a 128 x 128 network cannot even represent the
rule-based ``greedy`` bot from them (83% of its moves).  These planes state the combinatorial
facts directly.  Each is 40 wide (one slot per card, :mod:`conquian_env.cards`), 0 or 1, and
computed from the player's own view alone (:class:`~conquian_env.view.PlayerView`: their hand
and meld, the public cards, the cards they have not seen), never from the opponent's hidden hand
or the stock order, and never from any bot's evaluation or choice:

================================  ======================================================================
piece                             a card's slot is 1 when
================================  ======================================================================
``live``                          the player has not seen it (it is in the opponent's hand or the stock)
``fits_own_meld``                 it is not held and extends the player's meld on its own
``fits_opponent_meld``            it is not in the opponent's meld and extends that meld on its own
``hand_complete``                 it is a hand card in a 3-card set or run with two other held cards
                                  (with a meld card: one the meld can take), or it extends the own meld
``hand_partial``                  it is another hand card with one partner of a 3-card combination held
                                  and the other live
``combines_complete``             it is not held and makes a 3-card set or run with two hand cards
``combines_partial``              it is another card not held, with one partner in the hand and the
                                  other live
``winning_cards``                 it is live and the hand and meld with it would split into melds
``opponent_could_meld``           both partners of one of its 3-card combinations are live (the
                                  opponent may hold them: a discard of it may be taken)
``discard_leaves_outs``           the player is to discard, it is a hand card and its discard leaves at
                                  least one live card with which the rest of the hand and the meld would
                                  split into melds (the cards that would win the next take)
``discard_leaves_outs3``          the same, with at least three such live cards
``discard_leaves_outs2``          the same, with at least two
``discard_leaves_outs5``          the same, with at least five
``discard_keeps_complete``        the player is to discard, it is a hand card, and after its discard every
                                  other ``hand_complete`` card still is
``discard_keeps_combinations``    the same for every other ``hand_complete`` or ``hand_partial`` card:
                                  each still is one of the two
``discard_keeps_combines``        the same for the ``combines_complete`` cards: each still is (the discard
                                  breaks no combination the player waits on)
``discard_keeps_near``            the same for the ``combines_partial`` cards
================================  ======================================================================

The layout is :data:`conquian_env.layout.POTENTIAL` (the observation's pieces, then these).
:func:`encode_potential` builds one vector from a view; :func:`potential_rows` fills the rows of
the batched engine (:class:`conquian_env.vector.VectorGame`) with a compiled kernel that
``tests/test_potential.py`` holds equal to it, and :data:`POTENTIAL_OBSERVATION` is its encoder
for ``ConquianVectorEnv(observation="potential")``.  About 3 us a row on one core.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from .cards import NUM_CARDS, cards_of
from .game import DISCARD
from .layout import OBSERVATION, POTENTIAL
from .melds import NEIGHBOURS, PARTNERS, can_split_into_melds, meld_fits, neighbours_of, winning_cards
from .view import PlayerView

#: the planes' names, in order (the pieces after the observation's)
PLANES = tuple(p.name for p in POTENTIAL.pieces[len(OBSERVATION.pieces) :])
#: the width of the planes together, and of the whole vector
PLANES_SIZE = len(PLANES) * NUM_CARDS
POTENTIAL_SIZE = POTENTIAL.size
_FULL = (1 << NUM_CARDS) - 1


def _hand_status(hand: int, meld: int, live: int) -> tuple[int, int]:
    """(complete, partial): the hand cards in a 3-card set or run with held cards (or extending the
    meld), and the other hand cards with one partner held and the other live."""
    held = hand | meld
    complete = partial = 0
    for c in cards_of(hand):
        bit = 1 << c
        done = bool(meld & NEIGHBOURS[c]) and can_split_into_melds(meld | bit)
        part = False
        rest = held & ~bit
        for pm in PARTNERS[c]:
            if done:
                break
            have = pm & rest
            if have == pm:
                done = pm & meld == 0 or can_split_into_melds(meld | bit | pm)
            elif have and pm & ~rest & live:
                part = True
        if done:
            complete |= bit
        elif part:
            partial |= bit
    return complete, partial


def _combining(hand: int, outside: int, live: int) -> tuple[int, int]:
    """(combines, near): the ``outside`` cards making a 3-card set or run with two hand cards, and the
    other ``outside`` cards with one partner in the hand and the other live."""
    combines = near = 0
    for c in cards_of(outside & neighbours_of(hand)):
        full = part = False
        for pm in PARTNERS[c]:
            have = pm & hand
            if have == pm:
                full = True
                break
            if have and pm & ~hand & live:
                part = True
        if full:
            combines |= 1 << c
        elif part:
            near |= 1 << c
    return combines, near


def potential_masks(hand: int, meld: int, opponent_meld: int, live: int, discarding: bool = False) -> tuple[int, ...]:
    """The planes (the module docstring's table) as card masks, from a player's ``hand``,
    ``meld``, the ``opponent_meld``, the ``live`` cards (those the player has not seen) and
    whether the player is to discard."""
    held = hand | meld
    outside = ~held & _FULL
    complete, partial = _hand_status(hand, meld, live)
    combines, near = _combining(hand, outside, live)
    winning = winning_cards(hand, meld, live) if hand else 0
    could = 0
    for c, pairs in enumerate(PARTNERS):
        for pm in pairs:
            if pm & live == pm:
                could |= 1 << c
                break
    after = [0] * 8  # the discard planes, in the table's order
    for c in cards_of(hand) if discarding else ():
        bit = 1 << c
        left = hand & ~bit
        outs = winning_cards(left, meld, live).bit_count()
        complete2, partial2 = _hand_status(left, meld, live)
        combines2, near2 = _combining(left, outside | bit, live)
        facts = (outs >= 1, outs >= 3, outs >= 2, outs >= 5, complete2 == complete & ~bit,
                 (complete | partial) & ~bit & ~(complete2 | partial2) == 0, combines2 & ~bit == combines,
                 near2 & ~bit == near)  # fmt: skip
        for i, on in enumerate(facts):
            after[i] |= on << c
    return (live, meld_fits(meld, outside), meld_fits(opponent_meld, outside & ~opponent_meld), complete, partial,
            combines, near, winning, could, *after)  # fmt: skip


def encode_potential(view: PlayerView) -> np.ndarray:
    """The ``"potential"`` vector (``int8``, :data:`POTENTIAL_SIZE`) of ``view``'s player: the
    observation, then the planes, read from the view alone."""
    if not isinstance(view, PlayerView):
        raise TypeError(f"encode_potential needs a PlayerView, got {type(view).__name__}")
    discarding = view.my_turn and view.phase == DISCARD
    masks = potential_masks(view.hand, view.meld, view.opponent_meld, view.unseen(), discarding)
    bits = np.array(masks, dtype=np.int64)[:, None] >> np.arange(NUM_CARDS) & 1
    return np.concatenate([view.observation(), bits.astype(np.int8).ravel()])


#: the tables the kernel reads, passed as arguments (numba would freeze module globals into its cache)
PARTNER_COUNT = np.array([len(p) for p in PARTNERS], dtype=np.int64)
PARTNER_TABLE = np.zeros((NUM_CARDS, int(PARTNER_COUNT.max())), dtype=np.int64)
for _c, _pairs in enumerate(PARTNERS):
    PARTNER_TABLE[_c, : len(_pairs)] = _pairs
NEIGHBOUR_TABLE = np.array(NEIGHBOURS, dtype=np.int64)


def potential_rows(state: np.ndarray, rows: Any, players: Any, out: np.ndarray) -> np.ndarray:
    """The planes of ``players[k]`` in the batched engine's game ``rows[k]`` into ``out[k]``
    (``int8``, at least :data:`PLANES_SIZE` wide: the planes go in its last ``PLANES_SIZE`` columns,
    so ``out`` may be the whole vector whose first columns hold the observation); returns ``out``."""
    from . import potential_kernels as PK

    rows = np.asarray(rows, dtype=np.int64)
    players = np.asarray(players, dtype=np.int64)
    if out.dtype != np.int8 or out.ndim != 2 or out.shape[0] != len(rows) or out.shape[1] < PLANES_SIZE:
        raise ValueError(f"out must be int8 of shape ({len(rows)}, >= {PLANES_SIZE}), got {out.dtype} {out.shape}")
    if players.shape != rows.shape:
        raise ValueError(f"players must give one player per row ({len(rows)}), got shape {players.shape}")
    PK.planes(state, rows, players, out, out.shape[1] - PLANES_SIZE, PARTNER_TABLE, PARTNER_COUNT, NEIGHBOUR_TABLE)
    return out


class PotentialObservation:
    """The batched ``"potential"`` encoder: ``__call__(games, rows, players)`` gives the vectors of
    ``players`` in the engine's games ``rows`` (``ConquianVectorEnv(observation="potential")``)."""

    name = "potential"
    space = spaces.Box(0, 1, (POTENTIAL_SIZE,), np.int8)

    def __call__(self, games: Any, rows: np.ndarray, players: np.ndarray) -> np.ndarray:
        obs, _ = games.observe_rows(rows, players)
        return self.extend(games, rows, players, obs)

    def extend(self, games: Any, rows: np.ndarray, players: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The vectors from the observations ``obs`` of those rows (already encoded): the planes appended."""
        out = np.empty((len(obs), POTENTIAL_SIZE), dtype=np.int8)
        out[:, : OBSERVATION.size] = obs
        return potential_rows(games.state, rows, players, out)

    def __repr__(self) -> str:
        return "<PotentialObservation>"


#: the ``"potential"`` observation encoder of the vector environments
POTENTIAL_OBSERVATION = PotentialObservation()

__all__ = ["PLANES", "PLANES_SIZE", "POTENTIAL_OBSERVATION", "POTENTIAL_SIZE", "PotentialObservation",
           "encode_potential", "potential_masks", "potential_rows"]  # fmt: skip
