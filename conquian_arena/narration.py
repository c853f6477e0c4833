"""A game in words: how it opened, what each move did, where the face-up card came from, a hand.

:func:`describe_move` narrates one move from the states around it, in card text; the
terminal front end (:mod:`conquian_arena.play`), the browser front end
(:mod:`conquian_arena.webplay`), the terminal replay (:mod:`conquian_arena.replay`) and the
replay page (:mod:`conquian_arena.pages`) all tell the game with it.  A seat named
``"you"`` reads as the second person ("you took 7H", "your meld").
"""

from __future__ import annotations

from collections.abc import Sequence

from conquian_env.actions import DISCARD_BASE, FINISH, FORCE, NO_FORCE, REFUSE, TAKE, action_to_str
from conquian_env.cards import CARD_NAMES, NUM_CARDS, SUIT_MASK, cards_str
from conquian_env.game import DISCARDED, FORCE_DECISION, GAME_OVER, OFFER, GameState
from conquian_env.render import meld_text


def possessive(name: str) -> str:
    """``"your"`` for ``"you"``, else ``"greedy's"``."""
    return "your" if name == "you" else f"{name}'s"


def hand_text(mask: int) -> str:
    """Hand cards grouped by suit (two spaces between suits); '-' when empty."""
    groups = [cards_str(mask & suit) for suit in SUIT_MASK]
    return "  ".join(g for g in groups if g) or "-"


def source_text(source: int, owner: int, passed: bool, names: Sequence[str]) -> str:
    """Where the face-up card came from: ``"discarded by you"``, ``"turned by greedy, refused once"``."""
    how = "discarded" if source == DISCARDED else "turned"
    extra = ", refused once" if passed else ""
    return f"{how} by {names[owner]}{extra}"


def opening_text(names: Sequence[str], first: int, card: str) -> str:
    """The game's first sentence: ``"you turned 7H from the stock to start"``."""
    return f"{names[first]} turned {card} from the stock to start"


def describe_move(before: GameState, action: int, after: GameState, names: Sequence[str]) -> list[str]:
    """Sentences (card text) telling what ``action`` did, given the states around it.

    ``names`` are the two seats' names; the name ``"you"`` reads as the second person.
    """
    p = before.player
    who, other = names[p], names[1 - p]
    card = CARD_NAMES[before.face_up] if before.face_up >= 0 else "?"
    lines: list[str] = []
    if action == TAKE:
        lines.append(f"{who} took {card} ({source_text(before.source, before.owner, before.passed, names)})")
    elif action == REFUSE:
        lines.append(f"{who} refused {card}")
    elif 0 <= action < NUM_CARDS:
        lines.append(f"{who} laid {CARD_NAMES[action]} down with {card}")
    elif action == FINISH:
        if after.phase == GAME_OVER and after.winner == p:
            lines.append(f"{who} melded {card} and went out with 11 cards: {meld_text(after.melds[p])}")
        else:
            lines.append(f"{who} finished melding {card}; {possessive(who)} meld: {meld_text(after.melds[p])}")
    elif DISCARD_BASE <= action < DISCARD_BASE + NUM_CARDS:
        lines.append(f"{who} discarded {CARD_NAMES[action - DISCARD_BASE]}")
    elif action == FORCE:
        lines.append(f"{who} forced {other} to take {card}")
    elif action == NO_FORCE:
        lines.append(f"{who} did not force {other} to take {card}")
    else:
        lines.append(f"{who}: {action_to_str(action)}")
    if action in (REFUSE, NO_FORCE):
        refuser = p if action == REFUSE else 1 - p
        if after.phase == FORCE_DECISION:
            lines.append(f"{card} fits {possessive(names[refuser])} meld: {names[after.player]} may force the take")
        elif after.dead != before.dead:
            lines.append(f"{card} went to the dead pile")
            if after.phase == GAME_OVER:
                lines.append("the stock is empty: the game is a draw")
            else:
                lines.append(
                    f"{names[after.owner]} turned {CARD_NAMES[after.face_up]} from the stock ({after.stock_left} left)"
                )
        elif after.phase == OFFER:
            lines.append(f"{card} is offered to {names[after.player]}")
    return lines


__all__ = ["describe_move", "hand_text", "opening_text", "possessive", "source_text"]
