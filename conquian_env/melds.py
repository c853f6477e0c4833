"""Meld logic on card bit masks: can these cards split into valid sets and runs?

RULES.md section 2: a *set* is 3 or 4 cards of one rank; a *run* is 3 to 8 cards of
one suit, consecutive in the order ``A 2 3 4 5 6 7 J Q K``.  A player's meld is valid
when it splits into disjoint sets and runs.  A run of 9 or 10 cards splits into two
valid runs, so within one suit a group of cards is run-coverable exactly when every
maximal block of consecutive ranks has at least three cards; the only real choice is
which cards of a rank go into a set.  The functions here enumerate just those set
choices (ranks with three or more candidate cards) and check each suit with a table
built once at import.

Main entry points (all on masks, see :mod:`conquian_env.cards`):

* :func:`can_split_into_melds` -- is a mask a valid meld?
* :func:`can_extend_to_meld` -- is there a valid meld ``V`` with
  ``required <= V <= required | optional``?  (Can a take be completed?)
* :func:`playable_cards` -- which optional cards lie in *some* such ``V``
  (the legal "add this hand card" choices while melding).
* :func:`split_into_melds` -- one concrete split into sets and runs (for display).

Results of the two search functions are memoised in bounded dictionaries keyed by the
masks, since the same positions recur constantly in play and search.
"""

from __future__ import annotations

from .cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, cards_of

_CACHE_LIMIT = 1 << 18  # entries per memo table (~30 MB each when full)


def _blocks(pattern: int) -> list[tuple[int, int]]:
    """The maximal blocks of consecutive ranks in a 10-bit suit pattern, as (lowest rank, length)."""
    blocks = []
    r = 0
    while r < NUM_RANKS:
        if pattern >> r & 1:
            start = r
            while r < NUM_RANKS and pattern >> r & 1:
                r += 1
            blocks.append((start, r - start))
        else:
            r += 1
    return blocks


def _make_short_block_table() -> tuple[int, ...]:
    """For each 10-bit suit pattern, the bits lying in maximal blocks shorter than 3."""
    table = []
    for pattern in range(1 << NUM_RANKS):
        short = 0
        for start, length in _blocks(pattern):
            if length < 3:
                short |= ((1 << length) - 1) << start
        table.append(short)
    return tuple(table)


def _make_set_choice_table() -> tuple[tuple[int, ...], ...]:
    """For each 4-bit pattern of suits present at a rank, the suit subsets that form a set."""
    table = []
    for present in range(16):
        choices = [s for s in range(1, 16) if s & present == s and bin(s).count("1") >= 3]
        table.append(tuple(choices))
    return tuple(table)


#: ``SHORT_BLOCKS[p]``: cards of suit pattern ``p`` that are in blocks of fewer than 3 ranks.
SHORT_BLOCKS = _make_short_block_table()
#: ``SET_CHOICES[p]``: the 3- and 4-suit subsets of suit pattern ``p``.
SET_CHOICES = _make_set_choice_table()

_extend_cache: dict[int, bool] = {}
_playable_cache: dict[int, int] = {}


def _rank_suit_pattern(chunks: list[int], rank: int) -> int:
    return (
        (chunks[0] >> rank & 1)
        | (chunks[1] >> rank & 1) << 1
        | (chunks[2] >> rank & 1) << 2
        | (chunks[3] >> rank & 1) << 3
    )


def _search(avail: list[int], req: list[int], ranks: list[int], i: int) -> bool:
    """Try every set choice for ``ranks[i:]``; avail/req are per-suit 10-bit chunks."""
    if i == len(ranks):
        s = SHORT_BLOCKS
        return not (s[avail[0]] & req[0] or s[avail[1]] & req[1] or s[avail[2]] & req[2] or s[avail[3]] & req[3])
    rank = ranks[i]
    # Leaving this rank without a set is always one option.
    if _search(avail, req, ranks, i + 1):
        return True
    bit = 1 << rank
    present = _rank_suit_pattern(avail, rank)
    needed = _rank_suit_pattern(req, rank)
    for choice in SET_CHOICES[present]:
        if not choice & needed:
            continue  # a set of optional cards only never helps cover required cards
        a = avail[:]
        r = req[:]
        for s in range(NUM_SUITS):
            if choice >> s & 1:
                a[s] &= ~bit
                r[s] &= ~bit
        if _search(a, r, ranks, i + 1):
            return True
    return False


def _can_extend_uncached(required: int, optional: int) -> bool:
    union = required | optional
    a0, a1, a2, a3 = union & 1023, union >> 10 & 1023, union >> 20 & 1023, union >> 30
    r0, r1, r2, r3 = required & 1023, required >> 10 & 1023, required >> 20 & 1023, required >> 30
    s = SHORT_BLOCKS
    # ranks (10-bit) of required cards stranded in run blocks shorter than 3
    stuck = s[a0] & r0 | s[a1] & r1 | s[a2] & r2 | s[a3] & r3
    if not stuck:
        return True  # every required card already lies in a long enough run block
    # Ranks where a set could be made (3+ candidate cards) and that hold a required card.
    set_ranks = (a0 & a1 & (a2 | a3) | (a0 | a1) & a2 & a3) & (r0 | r1 | r2 | r3)
    if stuck & ~set_ranks:
        return False  # some required card fits neither a run block nor a possible set
    ranks = [r for r in range(NUM_RANKS) if set_ranks >> r & 1]
    return _search([a0, a1, a2, a3], [r0, r1, r2, r3], ranks, 0)


def can_extend_to_meld(required: int, optional: int) -> bool:
    """True when some valid meld contains all of ``required`` and only cards of ``optional`` besides.

    ``required`` is what must be on the table (the existing meld, the taken card, the
    hand cards chosen so far); ``optional`` is what may still be added (the rest of the
    hand).  ``required == 0`` is trivially extendable (the empty meld).
    """
    optional &= ~required
    key = required | optional << 40
    hit = _extend_cache.get(key)
    if hit is None:
        if len(_extend_cache) >= _CACHE_LIMIT:
            _extend_cache.clear()
        hit = _extend_cache[key] = _can_extend_uncached(required, optional)
    return hit


def can_split_into_melds(cards: int) -> bool:
    """True when the cards split into disjoint valid sets and runs (the empty set is valid)."""
    return can_extend_to_meld(cards, 0)


def playable_cards(required: int, optional: int) -> int:
    """Mask of the cards ``h`` of ``optional`` such that some valid meld holds ``required | h``.

    These are exactly the hand cards a player may add next while melding (RULES.md
    section 8).  Returns 0 when ``required`` itself cannot be completed.
    """
    optional &= ~required
    key = required | optional << 40
    hit = _playable_cache.get(key)
    if hit is not None:
        return hit
    result = 0
    if can_extend_to_meld(required, optional):
        rest = optional
        while rest:
            low = rest & -rest
            rest ^= low
            if low & result:
                continue
            if can_extend_to_meld(required | low, optional & ~low):
                result |= low
    if len(_playable_cache) >= _CACHE_LIMIT:
        _playable_cache.clear()
    _playable_cache[key] = result
    return result


def _find_set_choice(cards: int) -> list[int] | None:
    """The set masks of one valid split of ``cards`` (None when there is none)."""
    chunks = [cards >> (10 * s) & 1023 for s in range(NUM_SUITS)]
    ranks = [r for r in range(NUM_RANKS) if bin(_rank_suit_pattern(chunks, r)).count("1") >= 3]

    def go(avail: list[int], i: int, sets: list[int]) -> list[int] | None:
        if i == len(ranks):
            return sets if not any(SHORT_BLOCKS[c] for c in avail) else None
        found = go(avail, i + 1, sets)
        if found is not None:
            return found
        rank = ranks[i]
        for choice in SET_CHOICES[_rank_suit_pattern(avail, rank)]:
            a = avail[:]
            mask = 0
            for s in range(NUM_SUITS):
                if choice >> s & 1:
                    a[s] &= ~(1 << rank)
                    mask |= 1 << (10 * s + rank)
            found = go(a, i + 1, sets + [mask])
            if found is not None:
                return found
        return None

    return go(chunks, 0, [])


def split_into_melds(cards: int) -> list[tuple[str, int]]:
    """One split of ``cards`` into ``("set", mask)`` and ``("run", mask)`` parts.

    Runs are at most 8 cards (a block of 9 or 10 is cut in two).  Raises ``ValueError``
    if the cards do not split into valid melds.
    """
    sets = _find_set_choice(cards)
    if sets is None:
        from .cards import cards_str

        raise ValueError(f"cards {cards_str(cards)} do not split into valid sets and runs")
    parts: list[tuple[str, int]] = [("set", m) for m in sets]
    rest = cards
    for m in sets:
        rest &= ~m
    for s in range(NUM_SUITS):
        for start, length in _blocks(rest >> (10 * s) & 1023):
            pieces = [length] if length <= 8 else [length - length // 2, length // 2]
            pos = start
            for n in pieces:
                parts.append(("run", ((1 << n) - 1) << (10 * s + pos)))
                pos += n
    return parts


def clear_caches() -> None:
    """Empty the memo tables (for memory measurements; results never change)."""
    _extend_cache.clear()
    _playable_cache.clear()


# ---------------------------------------------------------------- 3-card combinations
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


def neighbours_of(mask: int) -> int:
    """The cards that could share a 3-card combination with some card of ``mask`` (the union of
    :data:`NEIGHBOURS` over its cards)."""
    near = 0
    for c in cards_of(mask):
        near |= NEIGHBOURS[c]
    return near


def winning_cards(hand: int, meld: int, live: int, candidates: int | None = None) -> int:
    """The ``live`` cards with which ``meld + hand`` would split into melds (all eleven cards).

    Only ``candidates`` are tried when given (default: every card that could share a
    combination with a held card)."""
    held = hand | meld
    if candidates is None:
        candidates = neighbours_of(held)
    outs = 0
    for x in cards_of(candidates & live & ~held):
        if can_split_into_melds(held | 1 << x):
            outs |= 1 << x
    return outs


def meld_fits(meld: int, candidates: int) -> int:
    """The cards of ``candidates`` that extend ``meld`` on their own into cards that split into melds."""
    if not meld:
        return 0
    return sum(1 << c for c in cards_of(candidates) if meld & NEIGHBOURS[c] and can_split_into_melds(meld | 1 << c))
