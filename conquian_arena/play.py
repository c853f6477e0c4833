"""Play Conquian against a bot in the terminal: the ``conquian-play`` command.

Usage::

    conquian-play --opponent greedy [--seed N] [--RULE ...] [--first you|bot] [--seat 0|1]
                  [--auto-pass] [--save FILE] [--rules]
    conquian-play --web [--host 127.0.0.1] [--port 8000] --opponent greedy [...]

(``python -m conquian_arena.play`` is the same command.)

``--opponent`` is any bot spec of :mod:`agents.registry` (``random``, ``greedy``,
``pimc:iterations=200``, ``ppo:model.zip`` ...).  ``--seed`` fixes the deal and the bot's
dice (a random seed is picked and printed when it is left out, so a game can be played
again); ``--seat`` is your seat in the deal; ``--first`` says who plays first;
A rule flag (``conquian_env.rules``: RULES.md section 7's variant) turns that variant on; ``--auto-pass`` plays
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

A meld is collected before it is played (:class:`~conquian_arena.human.MeldDraft`): ``take`` and the cards laid
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
(a :class:`~conquian_arena.human.DraftingPlayer`) whose ``act`` shows the player's view (a
:class:`~conquian_env.view.PlayerView`, nothing more) and asks for a move, and the game,
a :class:`~conquian_arena.human_game.HumanGame` as in the browser, is played by the same
:func:`conquian_arena.match.play_game` loop as every tournament, with the same forfeits
(quitting raises :class:`agents.base.Resign`) and the same record.  The moves are told by
:func:`conquian_arena.narration.describe_move`.  ``--web`` hands the same options to
:func:`conquian_arena.webplay.serve`.

From Python, :func:`main` takes the arguments, an ``input_fn`` (called with the prompt,
returns one line, raises ``EOFError`` at the end) and an ``output`` function (called with
one string per message), so tests and other front ends can drive it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import conquian_env
from agents.base import Resign
from conquian_env.actions import DISCARD_BASE, action_to_str, str_to_action
from conquian_env.cards import CARD_NAMES, NUM_CARDS, cards_str, parse_card
from conquian_env.game import MELD, GameState
from conquian_env.render import meld_text, render_text
from conquian_env.rules import STANDARD
from conquian_env.rules import add_arguments as add_rule_arguments
from conquian_env.rules import from_arguments as rules_from_arguments
from conquian_env.view import PlayerView

from .console import run_console
from .human import DraftingPlayer, MeldDraft, back_text, question_text
from .human_game import FIRST_CHOICES, HumanGame, Setup, save_record
from .narration import describe_move, hand_text, source_text

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
def _count(n: int) -> str:
    return f"{n} card" if n == 1 else f"{n} cards"


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
        source = source_text(view.face_up_source, view.face_up_owner, view.passed, names)
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
        super().__init__(auto_pass)
        self.input_fn = input_fn
        self.output = output
        self.names = tuple(names)
        self.ended_by_eof = False

    def reset(self, player: int, seed: int | None = None) -> None:
        super().reset(player, seed)
        self.ended_by_eof = False

    def tell_only_move(self, view: PlayerView, action: int) -> None:
        self.output(f"(only one move: {action_to_str(action)})")

    def ask_move(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        if first:
            self._show_turn(view, draft)
        else:
            self.output(draft.status(view) or "back to the start of your move")
            self.output(question_text(view, self.names, draft))
        choice = self._read_move(view, legal, draft)
        return None if choice == "back" else int(choice)

    def _read_move(self, view: PlayerView, legal: list[int], draft: MeldDraft) -> int | str:
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


def _show_end(game: HumanGame, state: GameState, output: OutputFn, stopped: bool) -> None:
    output("")
    result = game.result_text(state)
    if result is not None:
        output(f"*** {result} ***")
    elif stopped:
        output(f"game stopped after {state.move_count} moves")
    output("the whole table:")
    # the result is said above in words; render_text's own status line would repeat it
    table = render_text(state, game.names).splitlines()
    output("\n".join(line for line in table if not line.startswith(("game over:", "to move:"))))


# --------------------------------------------------------------------------- command line
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conquian-play",
        description="Play Conquian against a bot in the terminal (type 'help' during the game).",
    )
    parser.add_argument("--opponent", default="greedy", help="bot spec: random, greedy, pimc:iterations=200, ...")
    parser.add_argument("--seed", type=int, default=None, help="seed of the deal and the bot (default: random)")
    add_rule_arguments(parser)  # one flag per field of conquian_env.rules.Rules
    parser.add_argument("--first", choices=FIRST_CHOICES, default="you", help="who plays first (default: you)")
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
    rules = rules_from_arguments(args)
    if args.rules:
        output(RULES_PATH.read_text(encoding="utf-8"))
        return 0
    try:
        setup = Setup(args.opponent, args.seed, args.seat, args.first, rules, args.auto_pass)
        if args.web:
            from .webplay import serve

            return serve(setup, save=args.save, host=args.host, port=args.port, open_browser=args.open, output=output)
        game = HumanGame(setup)
    except ValueError as err:  # a bad seed, or a bot that cannot be built
        output(str(err))
        return EXIT_USAGE
    me, names = game.me, game.names
    variant = "" if rules == STANDARD else f", {rules} variant"
    output(f"Conquian: you (seat {me}) against {args.opponent} (seat {game.bot_seat}){variant}")
    output("type 'help' for help, 'quit' to stop")
    if input_fn is input and not sys.stdin.isatty():
        input_fn = _echoing_input  # piped answers are echoed so the transcript reads well
    human = HumanAgent(input_fn, output, names, auto_pass=args.auto_pass)
    output(game.opening)

    def show(before: GameState, action: int, after: GameState) -> None:
        for line in describe_move(before, action, after, names):
            output(line)

    record = game.play(human, on_move=show)
    status = EXIT_OK
    failure = record.failure
    if failure is not None and failure["seat"] == game.bot_seat and record.decisions == [0, 0]:
        output(f"the bot {args.opponent!r} failed to start: {failure['message']}")
        return EXIT_USAGE
    if human.ended_by_eof:
        output("\ninput ended: the game is abandoned")
        status = EXIT_EOF
    else:
        forfeit = game.forfeit_text(record)
        if forfeit is not None:
            output(forfeit)
        _show_end(game, record.replay()[-1], output, stopped=failure is not None)
    # only now: the seed gives away the whole deal (the opponent's hand, the stock order)
    output(f"deal seed {game.seed}; play it again with --seed {game.seed} --seat {me} --first {args.first}")
    if args.save:
        try:
            save_record(record, args.save)
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


def cli() -> int:
    """The ``conquian-play`` console script."""
    return run_console(main)


if __name__ == "__main__":
    sys.exit(cli())
