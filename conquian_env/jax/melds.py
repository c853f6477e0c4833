"""Meld questions (:mod:`conquian_env.melds`) as fixed-size bit arithmetic for XLA.

A set of cards is two ``uint32`` words, suit-aligned: word 0 holds clubs in bits 0-9 and
diamonds in bits 10-19, word 1 hearts and spades the same way, so card ``c`` is bit
``c % 20`` of word ``c // 20`` (:func:`card_words`).  Every function takes and returns
such ``(..., 2)`` arrays and runs without Python control flow on traced values, so
``jax.jit`` and ``jax.vmap`` compile it as it stands.

The search of :mod:`conquian_env.melds` becomes a fixed enumeration:

* Within one suit, the cards not used in sets can be covered by runs exactly when every
  maximal block of consecutive ranks has three or more cards (a block of 9 or 10 splits
  into two runs).  The cards in such blocks are ``L | L << 1 | L << 2`` with
  ``L = w & w >> 1 & w >> 2`` (a three-card window starts at each bit of ``L``): six
  operations on both suits of a word at once, no table (:func:`long_blocks`).
* The only real choice is which cards of a rank go into a set.  Sets are possible only at
  ranks with three or four candidate cards, and a player's cards number at most eleven
  (ten in hand and meld together, plus the face-up card), so at most three ranks can hold
  a set and at most two of them four cards.  Those ranks become three *slots*, four-card
  ranks first; a four-card slot has six options (no set, the quad, the four triples), a
  three-card slot two (no set, the triple).  All ``6 * 6 * 2 = 72`` combinations are
  tried at once as one broadcast.

For a combination with set cards ``Z`` the largest meld it allows is ``Z`` plus the
long-block cards of the rest; it is valid when every required card lies in it.  Hence
:func:`meld_search` answers both questions of the engine in one pass: whether some valid
meld holds ``required`` (``can_extend_to_meld``) and which optional cards lie in some
such meld (``playable_cards``: the union of those largest melds).

Exactness: the answers equal :mod:`conquian_env.melds` whenever ``required | optional``
holds at most eleven cards (at most three ranks with three cards or more), which every
question the rules ask satisfies; ``tests/test_jax.py`` compares them on random pools.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: bits of ranks 0..7 of both suits of a word: where a three-card window can start
_WINDOW_STARTS = jnp.uint32(0xFF | 0xFF << 10)
#: the 10 rank bits of the low suit of a word (a word holds two suits, 10 bits apart)
RANK_BITS = jnp.uint32(1023)


def card_words(card: jax.Array) -> jax.Array:
    """The two words of the one-card set ``{card}`` (both zero when ``card`` is negative)."""
    card = jnp.asarray(card, jnp.int32)
    bit = jnp.left_shift(jnp.uint32(1), (jnp.maximum(card, 0) % 20).astype(jnp.uint32))
    return jnp.stack(
        [
            jnp.where((card >= 0) & (card < 20), bit, jnp.uint32(0)),
            jnp.where(card >= 20, bit, jnp.uint32(0)),
        ],
        axis=-1,
    )


def cards_words(cards: jax.Array) -> jax.Array:
    """The words of the set of distinct card indexes ``cards`` (shape ``(..., k)``)."""
    cards = jnp.asarray(cards, jnp.int32)
    bits = jnp.left_shift(jnp.uint32(1), (cards % 20).astype(jnp.uint32))
    low = jnp.sum(jnp.where(cards < 20, bits, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)
    high = jnp.sum(jnp.where(cards >= 20, bits, jnp.uint32(0)), axis=-1, dtype=jnp.uint32)
    return jnp.stack([low, high], axis=-1)


def words_to_bools(words: jax.Array) -> jax.Array:
    """A ``(..., 2)`` card set as a ``(..., 40)`` bool vector (element ``c`` = card ``c``)."""
    shifts = jnp.arange(20, dtype=jnp.uint32)
    bits = jnp.right_shift(words[..., :, None], shifts) & jnp.uint32(1)
    return bits.reshape(words.shape[:-1] + (40,)).astype(jnp.bool_)


def count(words: jax.Array) -> jax.Array:
    """Number of cards in a ``(..., 2)`` card set (int32)."""
    return jnp.sum(jax.lax.population_count(words), axis=-1).astype(jnp.int32)


def long_blocks(words: jax.Array) -> jax.Array:
    """The cards of ``words`` lying in blocks of three or more consecutive ranks of a suit."""
    start = words & (words >> 1) & (words >> 2) & _WINDOW_STARTS
    return start | (start << 1) | (start << 2)


def _suits(words: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    w0, w1 = words[..., 0], words[..., 1]
    return w0 & RANK_BITS, w0 >> 10, w1 & RANK_BITS, w1 >> 10


def _lowest(x: jax.Array) -> jax.Array:
    return x & (~x + jnp.uint32(1))


def _slot_options(rank_bit: jax.Array, a: tuple[jax.Array, ...], six: bool) -> tuple[jax.Array, jax.Array]:
    """Set cards (``(n, 2)``) and validity (``(n,)``) of the options of one slot.

    ``rank_bit`` is the slot's rank as a one-bit 10-bit mask (0 for an empty slot).  The
    options are: no set, every card of the rank (a quad or a triple), and with ``six`` the
    four triples of a four-card rank (option ``2 + k`` leaves suit ``k`` out).
    """
    present = [(s & rank_bit) != 0 for s in a]
    n = present[0].astype(jnp.int32) + present[1] + present[2] + present[3]
    zero = jnp.zeros_like(rank_bit)
    high = rank_bit << 10
    options = [(False,) * 4, (True,) * 4]
    if six:
        options += [tuple(s != k for s in range(4)) for k in range(4)]
    words = []
    for suits in options:
        take = [present[s] & suits[s] for s in range(4)]
        w0 = jnp.where(take[0], rank_bit, zero) | jnp.where(take[1], high, zero)
        w1 = jnp.where(take[2], rank_bit, zero) | jnp.where(take[3], high, zero)
        words.append(jnp.stack([w0, w1], axis=-1))
    valid = [jnp.ones_like(n, dtype=jnp.bool_), n >= 3] + [n == 4] * (len(options) - 2)
    return jnp.stack(words, axis=-2), jnp.stack(valid, axis=-1)


def meld_search(required: jax.Array, optional: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(can_extend, playable, splits)`` for card sets ``required`` and ``optional`` (``(2,)`` words each).

    ``can_extend``: some valid meld ``V`` has ``required <= V <= required | optional``
    (:func:`conquian_env.melds.can_extend_to_meld`).  ``playable``: the optional cards that
    lie in some such meld (:func:`conquian_env.melds.playable_cards`; zero when there is
    none).  ``splits``: ``required`` alone is a valid meld
    (:func:`conquian_env.melds.can_split_into_melds`): every set choice of ``required`` is
    one of the choices tried for the union, so the same enumeration answers it.  One
    game's question: vmap it for a batch.  Exact when ``required | optional`` holds at most
    eleven cards (see the module docstring).
    """
    required = jnp.asarray(required, jnp.uint32)
    optional = jnp.asarray(optional, jnp.uint32) & ~required
    union = required | optional
    a = _suits(union)
    a0, a1, a2, a3 = a
    at_least_3 = (a0 & a1 & (a2 | a3)) | ((a0 | a1) & a2 & a3)
    quads = a0 & a1 & a2 & a3
    triples = at_least_3 & ~quads
    slots = []
    for _ in range(3):  # four-card ranks first, then three-card ones
        source = jnp.where(quads != 0, quads, triples)
        bit = _lowest(source)
        quads = quads & ~bit
        triples = triples & ~bit
        slots.append(bit)
    z1, v1 = _slot_options(slots[0], a, six=True)
    z2, v2 = _slot_options(slots[1], a, six=True)
    z3, v3 = _slot_options(slots[2], a, six=False)
    sets = z1[:, None, None, :] | z2[None, :, None, :] | z3[None, None, :, :]  # (6, 6, 2, 2)
    valid = v1[:, None, None] & v2[None, :, None] & v3[None, None, :]
    runs = long_blocks(union & ~sets)
    covered = jnp.all((required & ~sets & ~runs) == 0, axis=-1) & valid
    melds = jnp.where(covered[..., None], (sets | runs) & optional, jnp.uint32(0))
    playable = jax.lax.reduce(melds, jnp.uint32(0), jax.lax.bitwise_or, (0, 1, 2))
    own = required & ~sets  # required alone: sets of required cards only, runs of the rest of it
    splits = jnp.all(((sets & optional) | (own & ~long_blocks(own))) == 0, axis=-1) & valid
    return jnp.any(covered), playable, jnp.any(splits)


def can_extend(required: jax.Array, optional: jax.Array) -> jax.Array:
    """:func:`conquian_env.melds.can_extend_to_meld` on words (see :func:`meld_search`)."""
    return meld_search(required, optional)[0]


def can_split(cards: jax.Array) -> jax.Array:
    """:func:`conquian_env.melds.can_split_into_melds` on words (at most eleven cards)."""
    return meld_search(cards, jnp.zeros_like(cards))[0]


def playable(required: jax.Array, optional: jax.Array) -> jax.Array:
    """:func:`conquian_env.melds.playable_cards` on words (see :func:`meld_search`)."""
    return meld_search(required, optional)[1]
