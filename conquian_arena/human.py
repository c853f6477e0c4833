"""A person as a player, whichever front end shows the table: the meld held until it is finished.

A person builds a move before it is played: :class:`MeldDraft` holds ``take`` and the
cards laid with it, each checked against the rules as it is chosen, and takes the last one
back on ``back``; only ``finish`` hands the whole meld to the game.  :class:`DraftingPlayer`
is the :class:`agents.base.Agent` that plays such drafts one decision per ``act`` call;
a front end says how to ask the person (:meth:`DraftingPlayer.ask_move`): the terminal's
:class:`conquian_arena.play.HumanAgent`, the browser's
:class:`conquian_arena.webgame.WebHumanAgent`.  :func:`question_text` and
:func:`back_text` are what both put to the person, from the
:class:`~conquian_env.view.PlayerView` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agents.base import Agent
from conquian_env.actions import FINISH, TAKE
from conquian_env.cards import CARD_NAMES, NUM_CARDS, cards_of, cards_str
from conquian_env.game import DISCARD, FORCE_DECISION, MELD, OFFER
from conquian_env.melds import can_split_into_melds, playable_cards
from conquian_env.render import meld_text
from conquian_env.view import PlayerView


class MeldDraft:
    """A person's meld put together before it is played, so that a wrong card can be taken back.

    ``take`` and the hand cards chosen after it are held here, not played; each is checked
    as it is chosen against the same rules as the engine's mask (RULES.md section 8), from
    what the player's :class:`~conquian_env.view.PlayerView` shows.  :meth:`back` takes
    the last one back (the take too, unless the take was forced); :meth:`choose` of
    ``finish`` hands over the whole meld, take, cards and finish, to be played one decision
    at a time.  The terminal and the browser front ends both use it.
    """

    def __init__(self) -> None:
        #: TAKE (when the person took the card) and meld-card action ids, in order, not yet played
        self.actions: list[int] = []

    @property
    def taking(self) -> bool:
        """The draft begins with a take that is not played yet."""
        return bool(self.actions) and self.actions[0] == TAKE

    @property
    def cards(self) -> int:
        """Bit mask of the hand cards held in the draft."""
        mask = 0
        for a in self.actions:
            if a < NUM_CARDS:
                mask |= 1 << a
        return mask

    def legal(self, view: PlayerView) -> list[int]:
        """The choices now: the engine's legal moves, or, with a draft under way, the
        cards that can still join it and ``finish`` when it is a valid meld."""
        if not self.actions:
            return view.legal_actions()
        chosen = view.chosen | self.cards
        base = view.meld | 1 << view.face_up | chosen
        legal = cards_of(playable_cards(base, view.hand & ~chosen))
        if can_split_into_melds(base):
            legal.append(FINISH)
        return legal

    def choose(self, action: int) -> list[int]:
        """Add ``action`` (one of :meth:`legal`); returns the actions to play now: none while
        the meld is being collected, the whole meld on ``finish``, else ``[action]``."""
        if action == TAKE or 0 <= action < NUM_CARDS:
            self.actions.append(action)
            return []
        send = [*self.actions, action]
        self.actions = []
        return send

    def back(self) -> int | None:
        """Take back the last choice held; returns it, or None when there was none."""
        return self.actions.pop() if self.actions else None

    def status(self, view: PlayerView) -> str:
        """``"laying down 7H + 5S 6S (not played yet)"``; '' without a draft."""
        if not self.actions:
            return ""
        chosen = view.chosen | self.cards
        laid = f" + {cards_str(chosen)}" if chosen else ""
        return f"laying down {CARD_NAMES[view.face_up]}{laid} (not played yet)"


def back_text(draft: MeldDraft) -> str:
    """What ``back`` would take back: ``"take back 6S"``, ``"take back the take"``; '' for nothing."""
    if not draft.actions:
        return ""
    last = draft.actions[-1]
    return "take back the take" if last == TAKE else f"take back {CARD_NAMES[last]}"


def question_text(view: PlayerView, names: Sequence[str], draft: MeldDraft | None = None) -> str:
    """The question a person answers now, from what ``view`` shows (and the meld held in ``draft``)."""
    bot_name = names[1 - view.player]
    card = CARD_NAMES[view.face_up] if view.face_up >= 0 else "?"
    held = draft if draft is not None else MeldDraft()
    if held.actions or view.phase == MELD:
        chosen = view.chosen | held.cards
        forced = "you are forced to take " if view.forced else "melding "
        so_far = f" + {cards_str(chosen)}" if chosen else ""
        legal = held.legal(view)
        more = any(0 <= a < NUM_CARDS for a in legal)
        if FINISH not in legal:  # the finish button is disabled: the cards so far make no meld yet
            return f"{forced}{card}{so_far}: lay down another hand card (these cards make no meld yet)"
        finish = f"finish ({'finish' if more else 'it'} lays down {meld_text(view.meld | 1 << view.face_up | chosen)})"
        return f"{forced}{card}{so_far}: {'lay down another hand card or ' if more else ''}{finish}"
    if view.phase == OFFER:
        if TAKE in view.legal_actions():
            return f"{card} is offered to you: take it (and meld it now) or refuse it?"
        return f"{card} is offered to you; it does not fit any meld you could make, so you can only refuse it"
    if view.phase == DISCARD:
        return "discard one card of your hand (it is offered to " + bot_name + ")"
    if view.phase == FORCE_DECISION:
        return f"{bot_name} refused {card}, which fits their meld: force them to take it?"
    return "?"


class DraftingPlayer(Agent):
    """A person behind some front end (terminal, browser), played like any bot.

    A move is built in a :class:`MeldDraft` (a meld is held until it is finished, and
    ``back`` takes a card back) and sent to the game only once final, one decision per
    ``act`` call.  Front ends implement :meth:`ask_move` (and :meth:`tell_only_move` for
    ``auto_pass``)."""

    def __init__(self, auto_pass: bool = False) -> None:
        #: play the person's move by itself when only one is legal (and no meld is under way)
        self.auto_pass = auto_pass
        self._plan: list[int] = []  # a finished meld, played one decision a call

    def reset(self, player: int, seed: int | None = None) -> None:
        self._plan = []

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        plan = self._plan
        if plan:
            action = plan.pop(0)
            if action in view.legal_actions():
                return action
            plan.clear()  # cannot happen (the draft follows the engine's rules); ask instead
        draft = MeldDraft()
        first = True
        while True:
            legal = draft.legal(view)
            if self.auto_pass and len(legal) == 1 and not draft.actions:
                self.tell_only_move(view, legal[0])
                choice: int | None = legal[0]
            else:
                choice = self.ask_move(view, draft, legal, first)
                first = False
            if choice is None:  # a card taken back: ask again
                continue
            send = draft.choose(choice)
            if send:
                self._plan = send[1:]
                return send[0]

    def ask_move(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        """The next legal action for the draft, or None after a ``back``; may raise Resign."""
        raise NotImplementedError

    def tell_only_move(self, view: PlayerView, action: int) -> None:
        """Say that ``action`` was played for the person (the only legal move)."""


__all__ = ["DraftingPlayer", "MeldDraft", "back_text", "question_text"]
