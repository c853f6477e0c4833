"""Play Conquian against a bot in the terminal.

Usage::

    conquian-play --opponent greedy [--seed N] [--forcing] [--first you|bot] [--seat 0|1]
                  [--auto-pass] [--save FILE] [--rules]
    conquian-play --web [--host 127.0.0.1] [--port 8000] --opponent greedy [...]

(``python -m conquian_arena.play`` is the same command.)

``--opponent`` is any bot spec of :mod:`agents.registry` (``random``, ``greedy``,
``ismcts:iterations=200``, ``ppo:model.zip`` ...).  ``--seed`` fixes the deal and the bot's
dice (a random seed is picked and printed when it is left out, so a game can be played
again); ``--seat`` is your seat in the deal; ``--first`` says who plays first;
``--forcing`` turns on the forcing variant (RULES.md section 7); ``--auto-pass`` plays
your move by itself when only one is legal (and nothing can be taken back); ``--save FILE``
appends the game to FILE in the tournament record format (:mod:`conquian_arena.record`;
``conquian-replay FILE`` shows it); ``--rules`` prints the rule book.  ``--web`` plays in
the browser instead (:mod:`conquian_arena.webplay`, the ``web`` extra: ``--host``,
``--port``; ``--save`` defaults to ``results/play/games.jsonl`` there).

Each time you decide, the screen shows only what you can see: your hand, both melds split
into sets and runs, the face-up card and where it came from, the stock count, the dead
pile and how many cards the bot holds (never which).  Then the legal moves, numbered::

    1) take  2) refuse

Answer with the number or the text of a move: ``2``, ``refuse``, ``meld 5S``,
``discard kd`` (case-insensitive); a card alone (``5s``) picks the one legal move with that
card.  Other commands: ``help``, ``table`` (show the table again), ``back``, ``quit``.  A
bad answer is refused with a message that says what is allowed, and the question is asked
again.

A meld is collected before it is played (:class:`MeldDraft`): ``take`` and the cards laid
with it are held back, each checked against the rules as it is chosen, and ``back`` takes
the last one back (the take included); ``finish`` confirms the meld and only then are the
take, the cards and the finish played, one decision at a time as the rules count them.
Every move of the bot is shown in card text.  At the end the whole table is shown,
both hands included.

Input is read line by line (no curses), so a script can play through a pipe::

    yes 1 | conquian-play --opponent random --seed 3

End of input stops the game.  Exit status: 0 when the game was played to the end or you
quit, 1 when the input ended first, 2 for a bad command line (e.g. an unknown bot).

The person is just another player: :class:`HumanAgent` is an :class:`agents.base.Agent`
whose ``act`` shows the player's view (a :class:`~conquian_env.view.PlayerView`, nothing
more) and asks for a move, and the game is played by the same
:func:`conquian_arena.match.play_game` loop as every tournament, with the same forfeits
(quitting raises :class:`agents.base.Resign`) and the same record.

From Python, :func:`main` takes the arguments, an ``input_fn`` (called with the prompt,
returns one line, raises ``EOFError`` at the end) and an ``output`` function (called with
one string per message), so tests and other front ends can drive it.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import conquian_env
from agents.base import Agent, Resign
from agents.registry import make_agent
from conquian_env.actions import DISCARD_BASE, FINISH, FORCE, NO_FORCE, REFUSE, TAKE, action_to_str, str_to_action
from conquian_env.cards import CARD_NAMES, NUM_CARDS, SUIT_MASK, cards_of, cards_str, parse_card
from conquian_env.game import DISCARD, DISCARDED, FORCE_DECISION, GAME_OVER, MELD, OFFER, GameState
from conquian_env.melds import can_split_into_melds, playable_cards
from conquian_env.render import meld_text, render_text
from conquian_env.view import PlayerView

from .match import deal_for_seed, play_game
from .record import GameRecord

InputFn = Callable[[str], str]
OutputFn = Callable[[str], Any]

#: Exit statuses of :func:`main`.
EXIT_OK = 0
EXIT_EOF = 1
EXIT_USAGE = 2

_WIDTH = 78
#: the rule book, shipped with the environment package
RULES_PATH = Path(conquian_env.__file__).resolve().parent / "RULES.md"
_HELP_WORDS = ("help", "h", "?")
_QUIT_WORDS = ("quit", "exit", "q")
_TABLE_WORDS = ("table", "show", "look")
_BACK_WORDS = ("back", "undo", "b")

HELP_TEXT = """\
How to answer: type the number of a move or its text, e.g. "1", "take", "refuse",
"meld 5S", "discard KD", "finish", "force", "no force" (case does not matter).  A card
alone, e.g. "5s", picks the one legal move with that card.
Commands: "help" (this text), "table" (show the table again), "back" (take back the
last card, or the take, of a meld not yet finished), "quit" (stop the game).

The game in short (the full rules: conquian-play --rules):
- 40 cards, ranks A 2 3 4 5 6 7 J Q K (7 and J are neighbours, the ace is always low).
- A card in the middle can only be taken by melding it at once: "take" it, add hand
  cards one at a time with "meld <card>", then "finish".  Nothing is played until you
  finish: "back" takes a card back.  Your whole meld must always split into sets (3-4 of
  a rank) and runs (3+ in a row of one suit).
- After melding you discard one card, which is offered to your opponent.
- Refuse a card you turned and it goes to the opponent; refuse any other card and it
  goes to the dead pile and you turn the next stock card.
- The first to have 11 cards melded wins; an empty stock when a card must be turned is
  a draw."""


# --------------------------------------------------------------------------- text helpers
def _possessive(name: str) -> str:
    return "your" if name == "you" else f"{name}'s"


def _count(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


def hand_text(mask: int) -> str:
    """Hand cards grouped by suit (two spaces between suits); '-' when empty."""
    groups = [cards_str(mask & suit) for suit in SUIT_MASK]
    return "  ".join(g for g in groups if g) or "-"


def render_player_view(
    view: PlayerView, names: Sequence[str] = ("you", "opponent"), draft: MeldDraft | None = None
) -> str:
    """What ``view.player`` sees of the table: own hand, both melds, face-up card, stock, dead
    pile, and the cards the opponent discarded and refused this game.

    ``names[view.player]`` is the viewer, the other name the opponent.  The opponent's
    hand appears only as a count, the stock only as a count: the view holds no more.
    ``draft``, the viewer's meld not yet played, shows as being laid down.
    """
    opp_name = names[1 - view.player]
    label = max(len(opp_name) + 6, 10)
    chosen = view.chosen | (draft.cards if draft is not None else 0)
    lines = [
        f"{opp_name + ' hand':<{label}} {_count(view.opponent_hand_size)} (hidden)",
        f"{opp_name + ' meld':<{label}} {meld_text(view.opponent_meld)}",
        f"{'your meld':<{label}} {meld_text(view.meld)}",
        f"{'your hand':<{label}} {hand_text(view.hand & ~chosen)}",  # less the cards being laid down
    ]
    melding = view.phase == MELD or (draft is not None and draft.taking)
    if melding and view.face_up >= 0:
        laid = f" + {cards_str(chosen)}" if chosen else ""
        lines.append(f"{'laying down':<{label}} {CARD_NAMES[view.face_up]}{laid} ({names[view.to_move]})")
    elif view.face_up >= 0:
        source = _source_text(view.face_up_source, view.face_up_owner, view.passed, names)
        lines.append(f"{'face-up':<{label}} {CARD_NAMES[view.face_up]} ({source})")
    else:
        lines.append(f"{'face-up':<{label}} -")
    lines.append(f"{'stock':<{label}} {_count(view.stock_left)}")
    lines.append(f"{'dead pile':<{label}} {cards_str(view.dead) or '-'}")
    opp = 1 - view.player
    # what the opponent let go this game: a hint to the cards they do not need
    lines.append(f"{opp_name + ' discarded':<{label}} {cards_str(view.discards(opp)) or '-'}")
    lines.append(f"{opp_name + ' refused':<{label}} {cards_str(view.refusals(opp)) or '-'}")
    return "\n".join(lines)


def _source_text(source: int, owner: int, passed: bool, names: Sequence[str]) -> str:
    """``"discarded by you"``, ``"turned by greedy, refused once"``."""
    how = "discarded" if source == DISCARDED else "turned"
    extra = ", refused once" if passed else ""
    return f"{how} by {names[owner]}{extra}"


def describe_move(before: GameState, action: int, after: GameState, names: Sequence[str]) -> list[str]:
    """Sentences (card text) telling what ``action`` did, given the states around it.

    ``names`` are the two seats' names; the name ``"you"`` reads as the second person.
    """
    p = before.player
    who, other = names[p], names[1 - p]
    card = CARD_NAMES[before.face_up] if before.face_up >= 0 else "?"
    lines: list[str] = []
    if action == TAKE:
        lines.append(f"{who} took {card} ({_source_text(before.source, before.owner, before.passed, names)})")
    elif action == REFUSE:
        lines.append(f"{who} refused {card}")
    elif 0 <= action < NUM_CARDS:
        lines.append(f"{who} laid {CARD_NAMES[action]} down with {card}")
    elif action == FINISH:
        if after.phase == GAME_OVER and after.winner == p:
            lines.append(f"{who} melded {card} and went out with 11 cards: {meld_text(after.melds[p])}")
        else:
            lines.append(f"{who} finished melding {card}; {_possessive(who)} meld: {meld_text(after.melds[p])}")
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
            lines.append(f"{card} fits {_possessive(names[refuser])} meld: {names[after.player]} may force the take")
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


def _wrap_moves(items: list[str]) -> list[str]:
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(line) + 2 + len(item) > _WIDTH:
            lines.append(line)
            line = ""
        line = f"{line}  {item}" if line else f"  {item}"
    if line:
        lines.append(line)
    return lines


def moves_text(legal: Sequence[int]) -> str:
    """The legal moves numbered from 1: ``"  1) take  2) refuse"`` (wrapped)."""
    return "\n".join(_wrap_moves([f"{i}) {action_to_str(a)}" for i, a in enumerate(legal, 1)]))


def parse_choice(text: str, legal: Sequence[int]) -> int | str:
    """A legal action id, or a command ("help", "quit", "table", "back"), from what a person typed.

    Accepts a move number (1-based), a move text (``"meld 5s"``) or a card alone when it
    picks exactly one legal move.  Raises ``ValueError`` saying what was wrong.
    """
    words = " ".join(str(text).strip().lower().split())
    if not words:
        raise ValueError("no move given")
    if words in _HELP_WORDS:
        return "help"
    if words in _QUIT_WORDS:
        return "quit"
    if words in _TABLE_WORDS:
        return "table"
    if words in _BACK_WORDS:
        return "back"
    if words.isdigit():
        n = int(words)
        if 1 <= n <= len(legal):
            return legal[n - 1]
        raise ValueError(f"there is no move number {n}")
    try:
        action = str_to_action(words)
    except ValueError as err:
        if words.split()[0] in ("meld", "discard"):
            raise ValueError(str(err)) from None
        action = -1
    if action >= 0:
        if action in legal:
            return action
        raise ValueError(f"'{action_to_str(action)}' is not a legal move now")
    try:
        card = parse_card(words)
    except ValueError:
        raise ValueError(f"'{text.strip()}' is not a move") from None
    matches = [a for a in legal if a < DISCARD_BASE + NUM_CARDS and a % DISCARD_BASE == card]
    if len(matches) == 1:
        return matches[0]
    raise ValueError(f"no legal move uses {CARD_NAMES[card]}")


def _allowed_text(legal: Sequence[int]) -> str:
    texts = ", ".join(f"'{action_to_str(a)}'" for a in legal)
    n = len(legal)
    moves = f"type 1 or {texts}" if n == 1 else f"type a number from 1 to {n} or one of {texts}"
    return f"{moves}; 'help' explains, 'quit' stops"


# --------------------------------------------------------------------------- the person as a player
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
        text = f"{forced}{card}{so_far}: lay down another hand card or finish"
        if FINISH in held.legal(view):
            text += f" (finish lays down {meld_text(view.meld | 1 << view.face_up | chosen)})"
        return text
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
    ``act`` call.  Front ends implement :meth:`_choose` (and :meth:`_only_move` for
    ``auto_pass``)."""

    auto_pass = False

    def reset(self, player: int, seed: int | None = None) -> None:
        self._plan: list[int] = []  # a finished meld, played one decision a call

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        plan = getattr(self, "_plan", [])
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
                self._only_move(view, legal[0])
                choice: int | None = legal[0]
            else:
                choice = self._choose(view, draft, legal, first)
                first = False
            if choice is None:  # a card taken back: ask again
                continue
            send = draft.choose(choice)
            if send:
                self._plan = send[1:]
                return send[0]

    def _choose(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        """The next legal action for the draft, or None after a ``back``; may raise Resign."""
        raise NotImplementedError

    def _only_move(self, view: PlayerView, action: int) -> None:
        """Say that ``action`` was played for the person (the only legal move)."""


class HumanAgent(DraftingPlayer):
    """A person at the terminal, played like any bot: ``act`` shows what the player sees
    (from the :class:`~conquian_env.view.PlayerView` alone) and asks for a move until a legal
    one is given.  A meld is collected in a :class:`MeldDraft` and played only once
    finished (``back`` takes a card back).  ``quit`` or the end of input raises
    :class:`agents.base.Resign` (``ended_by_eof`` says which), so the game loop records a
    forfeit."""

    name = "you"

    def __init__(
        self,
        input_fn: InputFn = input,
        output: OutputFn = print,
        names: Sequence[str] = ("you", "opponent"),
        auto_pass: bool = False,
    ):
        self.input_fn = input_fn
        self.output = output
        self.names = tuple(names)
        self.auto_pass = auto_pass
        self.ended_by_eof = False
        self._plan = []

    def reset(self, player: int, seed: int | None = None) -> None:
        super().reset(player, seed)
        self.ended_by_eof = False

    def _only_move(self, view: PlayerView, action: int) -> None:
        self.output(f"(only one move: {action_to_str(action)})")

    def _choose(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        if first:
            self._show_turn(view, draft)
        else:
            self.output(draft.status(view) or "back to the start of your move")
            self.output(question_text(view, self.names, draft))
        choice = self._ask(view, legal, draft)
        return None if choice == "back" else int(choice)

    def _ask(self, view: PlayerView, legal: list[int], draft: MeldDraft) -> int | str:
        """Ask until a legal move is given, or a ``back`` done (returned as "back")."""
        while True:
            self.output(moves_text(legal))
            if draft.actions:
                self.output(f"  back) {back_text(draft)}")
            try:
                line = self.input_fn("your move> ")
            except EOFError:
                self.ended_by_eof = True
                raise Resign("the input ended") from None
            try:
                choice = parse_choice(line, legal)
            except ValueError as err:
                self.output(f"{err}: {_allowed_text(legal)}")
                continue
            if choice == "help":
                self.output(HELP_TEXT)
            elif choice == "table":
                self._show_turn(view, draft)
            elif choice == "quit":
                raise Resign("the person stopped the game")
            elif choice == "back":
                if not draft.actions:
                    self.output("nothing to take back: only a meld not yet finished can be taken back")
                    continue
                what = back_text(draft)
                draft.back()
                self.output(f"you {what}")
                return "back"
            else:
                return choice

    def _show_turn(self, view: PlayerView, draft: MeldDraft | None = None) -> None:
        self.output("")
        self.output(f"--- your move (move {view.move_count + 1}) ---")
        self.output(render_player_view(view, self.names, draft))
        self.output(question_text(view, self.names, draft))


def _show_end(state: GameState, me: int, names: Sequence[str], output: OutputFn, stopped: bool) -> None:
    output("")
    if state.is_terminal():
        if state.winner == me:
            output(f"*** you win in {state.move_count} moves ***")
        elif state.winner >= 0:
            output(f"*** {names[state.winner]} wins in {state.move_count} moves ***")
        else:
            output(f"*** draw: the stock ran out after {state.move_count} moves ***")
    elif stopped:
        output(f"game stopped after {state.move_count} moves")
    output("the whole table:")
    # the result is said above in words; render_text's own status line would repeat it
    table = render_text(state, names).splitlines()
    output("\n".join(line for line in table if not line.startswith(("game over:", "to move:"))))


def _tell_forfeit(record: GameRecord, me: int, output: OutputFn) -> None:
    """Say how a game that ended by a forfeit ended (the table follows)."""
    failure = record.failure
    assert failure is not None
    seat, kind, message = failure["seat"], failure["kind"], failure["message"]
    if seat == me and kind == "quit":
        output("you quit the game")
    elif seat == me:
        output(f"your move failed ({message})")
    elif kind == "crash":
        output(f"the bot crashed ({message}): you win by forfeit")
    elif kind == "illegal":
        output(f"the bot chose an illegal move ({message}): you win by forfeit")
    else:
        output(f"the bot gave up ({message}): you win")


# --------------------------------------------------------------------------- command line
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conquian-play",
        description="Play Conquian against a bot in the terminal (type 'help' during the game).",
    )
    parser.add_argument("--opponent", default="greedy", help="bot spec: random, greedy, ismcts:iterations=200, ...")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deal and the bot (default: random)")
    parser.add_argument("--forcing", action="store_true", help="play the forcing variant (RULES.md section 7)")
    parser.add_argument("--first", choices=("you", "bot"), default="you", help="who plays first (default: you)")
    parser.add_argument("--seat", type=int, choices=(0, 1), default=0, help="your seat in the deal (default: 0)")
    parser.add_argument("--rules", action="store_true", help="print the rules of the game (RULES.md) and exit")
    parser.add_argument("--auto-pass", action="store_true", help="play your move by itself when only one move is legal")
    parser.add_argument(
        "--save",
        metavar="FILE",
        help="append the game to FILE (tournament record format, one JSON line): replay it with conquian-replay"
        " (with --web: default results/play/games.jsonl)",
    )
    web = parser.add_argument_group("in the browser (the 'web' extra: pip install 'conquian-env[web]')")
    web.add_argument("--web", action="store_true", help="play in the browser: serve a local page")
    web.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    web.add_argument("--port", type=_port, default=8000, help="port to listen on (default: 8000; 0: any free port)")
    web.add_argument("--open", action="store_true", help="open the page in the default browser")
    return parser


def main(argv: Sequence[str] | None = None, input_fn: InputFn = input, output: OutputFn = print) -> int:
    """Play one game; returns the exit status (see the module docstring)."""
    args = _parser().parse_args(argv)
    if args.rules:
        output(RULES_PATH.read_text(encoding="utf-8"))
        return 0
    if args.web:
        from .webplay import main as web_main

        return web_main(args, output)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    try:
        bot = make_agent(args.opponent, seed=seed)
    except (ValueError, ImportError) as err:
        output(f"cannot build the bot {args.opponent!r}: {err}")
        return EXIT_USAGE
    me = args.seat
    bot_seat = 1 - me
    first = me if args.first == "you" else bot_seat
    bot_name = str(getattr(bot, "name", "bot") or "bot")
    if bot_name == "you":
        bot_name = "bot"
    names = ("you", bot_name) if me == 0 else (bot_name, "you")
    variant = ", forcing variant" if args.forcing else ""
    output(f"Conquian: you (seat {me}) against {args.opponent} (seat {bot_seat}){variant}")
    output("type 'help' for help, 'quit' to stop")
    if input_fn is input and not sys.stdin.isatty():
        input_fn = _echoing_input  # piped answers are echoed so the transcript reads well
    human = HumanAgent(input_fn, output, names, auto_pass=args.auto_pass)
    players = [human, bot] if me == 0 else [bot, human]
    hands, stock = deal_for_seed(seed)
    output(f"{names[first]} turned {stock[0]} from the stock to start")

    def show(before: GameState, action: int, after: GameState) -> None:
        for line in describe_move(before, action, after, names):
            output(line)

    record = play_game(players, hands=hands, stock=stock, first=first, forcing=args.forcing, seed=seed, on_move=show)
    status = EXIT_OK
    failure = record.failure
    if failure is not None and failure["seat"] == bot_seat and record.decisions == [0, 0]:
        output(f"the bot {args.opponent!r} failed to start: {failure['message']}")
        return EXIT_USAGE
    if human.ended_by_eof:
        output("\ninput ended: the game is abandoned")
        status = EXIT_EOF
    else:
        if failure is not None:
            _tell_forfeit(record, me, output)
        _show_end(record.replay()[-1], me, names, output, stopped=failure is not None)
    # only now: the seed gives away the whole deal (the opponent's hand, the stock order)
    output(f"deal seed {seed}; play it again with --seed {seed} --seat {me} --first {args.first}")
    if args.save:
        try:
            with open(args.save, "a", encoding="utf-8") as f:
                f.write(json.dumps(record.to_dict()) + "\n")
        except OSError as err:
            output(f"could not save the game to {args.save}: {err}")
            return EXIT_USAGE
        output(f"saved to {args.save}: conquian-replay {args.save} --list")
    return status


def _port(text: str) -> int:
    """A TCP port for ``--port``: 0 (any free port) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, got {port}")
    return port


def _echoing_input(prompt: str) -> str:
    line = input(prompt)
    print(line)
    return line


def run_console(main_fn: Callable[[], int]) -> int:
    """Run a console script's ``main``: Ctrl-C ends it with status 130 and a word, a closed
    pipe (output piped into ``head``) quietly."""
    try:
        return main_fn()
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    except BrokenPipeError:
        return 0


def cli() -> int:
    """The ``conquian-play`` console script."""
    return run_console(main)


if __name__ == "__main__":
    sys.exit(cli())
