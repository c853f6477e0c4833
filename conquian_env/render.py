"""Text rendering of a game state (the environments' ``"ansi"`` and ``"human"`` modes): the
referee's table, or one player's view of it."""

from __future__ import annotations

from .cards import CARD_NAMES, cards_of, cards_str
from .game import DISCARDED, GAME_OVER, MELD, PHASE_NAMES, GameState
from .melds import split_into_melds


def _sorted_hand(mask: int) -> str:
    """Hand text grouped by suit, ace first; '-' when empty."""
    return cards_str(mask) or "-"


def meld_groups(mask: int) -> list[list[int]]:
    """A meld as its combinations, each a list of cards: sets first (by rank, cards by
    suit), then runs (by suit and start).  Shared by the text and the picture renders."""
    if not mask:
        return []
    parts = split_into_melds(mask)
    parts.sort(key=lambda p: (p[0] != "set", _sort_key(p[0], p[1])))
    return [_ordered(kind, m) for kind, m in parts]


def meld_text(mask: int) -> str:
    """A meld split into its sets and runs: ``[5S 6S 7S] [JD JH JS]``; '-' when empty."""
    if not mask:
        return "-"
    return " ".join("[" + " ".join(CARD_NAMES[c] for c in group) + "]" for group in meld_groups(mask))


def _sort_key(kind: str, mask: int) -> int:
    low = (mask & -mask).bit_length() - 1
    return low % 10 if kind == "set" else low  # sets by rank, runs by suit then start


def _ordered(kind: str, mask: int) -> list[int]:
    cards = cards_of(mask)
    if kind == "set":
        cards.sort(key=lambda c: c // 10)
    return cards


def render_text(
    state: GameState, names: tuple[str, str] = ("player_0", "player_1"), observer: int | None = None
) -> str:
    """A readable table of the game.  ``observer``: ``None`` shows both hands (the referee's view);
    ``0`` or ``1`` shows that player's view: the other hand as its size alone (as the picture
    draws card backs), the cards being laid down in a meld, which are shown to both, aside."""
    lines = []
    width = max(len(n) for n in names)
    chosen = state.chosen if state.phase == MELD else 0
    for p in (0, 1):
        hand = state.hands[p]
        if observer is None or observer == p:
            shown = _sorted_hand(hand)
        else:
            laid = hand & chosen
            shown = "hidden" + (f" (laying down {cards_str(laid)})" if laid else "")
        lines.append(f"{names[p]:<{width}}  hand ({hand.bit_count():2d}): {shown}")
        lines.append(f"{'':<{width}}  meld ({state.melds[p].bit_count():2d}): {meld_text(state.melds[p])}")
    if state.face_up >= 0:
        how = "discarded" if state.source == DISCARDED else "turned"
        extra = ", refused once" if state.passed else ""
        face = f"{CARD_NAMES[state.face_up]} ({how} by {names[state.owner]}{extra})"
    else:
        face = "-"
    lines.append(f"face-up: {face}   stock: {state.stock_left}   dead: {_sorted_hand(state.dead)}")
    if state.phase == MELD and state.chosen:
        lines.append(f"laying down: {cards_str(state.chosen)}")
    if state.phase == GAME_OVER:
        result = "draw (stock exhausted)" if state.winner < 0 else f"won by {names[state.winner]}"
        lines.append(f"game over: {result}")
    else:
        lines.append(f"to move: {names[state.player]} ({PHASE_NAMES[state.phase]})")
    return "\n".join(lines)
