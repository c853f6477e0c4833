"""The 40 Conquian cards: canonical indexes, text form and bit-mask helpers.

Cards follow RULES.md section 1 exactly:

* ranks ``A 2 3 4 5 6 7 J Q K`` have rank indexes ``0..9`` (ace low, 7 next to J);
* suits ``C D H S`` have suit indexes ``0..3``;
* a card's index is ``suit * 10 + rank`` (``AC = 0``, ``KC = 9``, ``7H = 26``,
  ``JS = 37``, ``KS = 39``); its text is rank letter then suit letter (``"7H"``).

Inside the engine a set of cards is an ``int`` bit mask: bit ``i`` is set when card
``i`` is in the set.  Text appears only at the edges (parsing, rendering, errors).

>>> parse_card("7H"), card_str(37)
(26, 'JS')
>>> cards_str(mask_of(["AC", "KS"]))
'AC KS'
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "A234567JQK"
SUITS = "CDHS"
NUM_RANKS = 10
NUM_SUITS = 4
NUM_CARDS = 40
FULL_MASK = (1 << NUM_CARDS) - 1

#: Text of every card, by index.
CARD_NAMES: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)
_NAME_TO_CARD: dict[str, int] = {name: i for i, name in enumerate(CARD_NAMES)}
# Accept the common aliases users type ("10" never exists in Conquian, so no alias for it).
for _i, _name in enumerate(CARD_NAMES):
    _NAME_TO_CARD[_name.lower()] = _i
    _NAME_TO_CARD[_name[0] + _name[1].lower()] = _i
    _NAME_TO_CARD[_name[0].lower() + _name[1]] = _i

#: Bit mask of each card; bit mask of all cards of a rank / of a suit.
CARD_BIT: tuple[int, ...] = tuple(1 << i for i in range(NUM_CARDS))
RANK_MASK: tuple[int, ...] = tuple(sum(1 << (s * NUM_RANKS + r) for s in range(NUM_SUITS)) for r in range(NUM_RANKS))
SUIT_MASK: tuple[int, ...] = tuple(((1 << NUM_RANKS) - 1) << (s * NUM_RANKS) for s in range(NUM_SUITS))


def rank_of(card: int) -> int:
    """Rank index 0..9 (A..K) of a card index."""
    return card % NUM_RANKS


def suit_of(card: int) -> int:
    """Suit index 0..3 (C, D, H, S) of a card index."""
    return card // NUM_RANKS


def card_str(card: int) -> str:
    """Canonical text of a card index, e.g. ``26 -> "7H"``."""
    if not isinstance(card, int) or isinstance(card, bool) or not 0 <= card < NUM_CARDS:
        raise ValueError(f"unknown card {card!r}: a card index is an int from 0 to 39")
    return CARD_NAMES[card]


def parse_card(card: str | int) -> int:
    """Card index from text (``"7H"``, case-insensitive) or from an index 0..39.

    Raises ``ValueError`` naming the bad card and what is allowed.
    """
    if isinstance(card, str):
        idx = _NAME_TO_CARD.get(card.strip())
        if idx is None:
            raise ValueError(
                f"unknown card {card!r}: a card is a rank from {' '.join(RANKS)} followed by a "
                f"suit from {' '.join(SUITS)}, e.g. '7H' or 'JS' (there are no 8s, 9s or 10s)"
            )
        return idx
    # numpy integers are accepted as indexes; bools are not cards
    if isinstance(card, bool) or not hasattr(card, "__index__"):
        raise ValueError(f"unknown card {card!r}: give card text like '7H' or an index from 0 to 39")
    idx = card.__index__()
    if not 0 <= idx < NUM_CARDS:
        raise ValueError(f"unknown card index {idx}: card indexes run from 0 to 39")
    return idx


def parse_cards(cards: Iterable[str | int] | str) -> list[int]:
    """Card indexes from an iterable of cards or a space/comma separated string."""
    if isinstance(cards, str):
        cards = cards.replace(",", " ").split()
    return [parse_card(c) for c in cards]


def mask_of(cards: Iterable[str | int] | str) -> int:
    """Bit mask of some cards (text or indexes); duplicates are an error."""
    mask = 0
    for c in parse_cards(cards):
        bit = 1 << c
        if mask & bit:
            raise ValueError(f"card {CARD_NAMES[c]} is given twice")
        mask |= bit
    return mask


def cards_of(mask: int) -> list[int]:
    """Card indexes of a mask, in index order (suit by suit, ace first).

    Works for any non-negative int (the engine also lists legal action ids with it).
    """
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def cards_str(mask: int) -> str:
    """Space separated text of the cards of a mask, in index order."""
    return " ".join(CARD_NAMES[c] for c in cards_of(mask))


def popcount(mask: int) -> int:
    """Number of cards in a mask."""
    return mask.bit_count()
