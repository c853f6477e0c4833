"""One game of a person against a bot, whichever front end shows it.

:class:`HumanGame` is what the terminal (:mod:`conquian_arena.play`) and the browser
(:mod:`conquian_arena.webplay`) front ends share: the deal's seed (a random one when none
is given), the bot built from its spec (a clear ``ValueError`` when it cannot be), the
seats and their names, the deal, the game played by the one game loop
(:func:`conquian_arena.match.play_game`), how it ended in words, and its record appended
to a file in the tournament record format (:func:`save_record`), so ``conquian-replay FILE``
shows it.  The person is any :class:`agents.base.Agent`, usually
a :class:`conquian_arena.human.DraftingPlayer`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from agents.base import Agent
from agents.registry import make_agent
from conquian_env.extras import missing
from conquian_env.game import GameState
from conquian_env.rules import Rules, resolve

from .match import MoveObserver, deal_for_seed, play_game
from .narration import opening_text
from .record import GameRecord

#: who plays first, as a person says it
FIRST_CHOICES = ("you", "bot")


def check_seed(seed: object) -> int:
    """``seed`` when it is a non-negative integer; else a ``ValueError`` that says so."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"the seed must be a non-negative integer, got {seed!r}")
    return seed


def random_seed() -> int:
    """A fresh seed for a deal nobody asked for (told after the game, so it can be played again)."""
    return random.randrange(2**31)


def build_bot(spec: str, seed: int) -> Agent:
    """The bot of ``spec`` (:func:`agents.registry.make_agent`); a ``ValueError`` naming the spec
    when it cannot be built (an unknown bot, a bad parameter, a missing extra)."""
    try:
        return make_agent(spec, seed=seed)
    except ImportError as err:  # a missing extra: its line names the spec and the install line
        raise ValueError(str(missing(err, f"bot spec {spec!r}", typed=True))) from err
    except ValueError as err:
        raise ValueError(f"cannot build the bot {spec!r}: {err}") from err


@dataclass(frozen=True)
class Setup:
    """A person's game as asked for, whichever front end shows it: the bot's spec, the deal's seed
    (None: a random one), the person's seat, who plays first (``"you"`` or ``"bot"``), the rules
    (None: the standard game) and whether a move plays itself when it is the only legal one.
    Raises ``ValueError`` for a bad seed, seat or ``first``, before anything is built."""

    opponent: str
    seed: int | None = None
    seat: int = 0
    first: str = "you"
    rules: Rules | None = None
    auto_pass: bool = False

    def __post_init__(self) -> None:
        if self.seat not in (0, 1) or isinstance(self.seat, bool):
            raise ValueError(f"the seat must be 0 or 1, got {self.seat!r}")
        if self.first not in FIRST_CHOICES:
            raise ValueError(f"first must be one of {', '.join(FIRST_CHOICES)}, got {self.first!r}")
        if self.seed is not None:
            check_seed(self.seed)
        object.__setattr__(self, "rules", resolve(self.rules))  # None: the standard game


class HumanGame:
    """A person against a bot, as ``setup`` (a :class:`Setup`) says, on the deal of its seed.

    Raises ``ValueError`` for a bot that cannot be built, before anything is played.
    """

    def __init__(self, setup: Setup):
        self.setup = setup
        opponent, seat, first = setup.opponent, setup.seat, setup.first
        self.opponent = opponent
        self.seed = random_seed() if setup.seed is None else setup.seed
        self.rules = setup.rules
        #: the person's seat, the bot's, and the seat that plays first
        self.me, self.bot_seat = seat, 1 - seat
        self.first = seat if first == "you" else 1 - seat
        self.bot = build_bot(opponent, self.seed)
        bot_name = str(getattr(self.bot, "name", "bot") or "bot")
        self.bot_name = "bot" if bot_name == "you" else bot_name  # "you" is the person
        #: the seats' names: "you" and the bot's
        self.names = ("you", self.bot_name) if seat == 0 else (self.bot_name, "you")
        self.hands, self.stock = deal_for_seed(self.seed)

    @property
    def opening(self) -> str:
        """The first sentence of the game: who turned which card from the stock."""
        return opening_text(self.names, self.first, self.stock[0])

    def play(self, person: Agent, on_move: MoveObserver | None = None) -> GameRecord:
        """Play the game, ``person`` in :attr:`me`'s seat; returns its record (a forfeit included)."""
        players = [person, self.bot] if self.me == 0 else [self.bot, person]
        return play_game(
            players,
            hands=self.hands,
            stock=self.stock,
            first=self.first,
            rules=self.rules,
            seed=self.seed,
            on_move=on_move,
        )

    def result_text(self, final: GameState) -> str | None:
        """``"you win in 41 moves"``, ``"greedy wins in ..."``, ``"draw: ..."``; None while not over."""
        if not final.is_terminal():
            return None
        if final.winner == self.me:
            return f"you win in {final.move_count} moves"
        if final.winner >= 0:
            return f"{self.names[final.winner]} wins in {final.move_count} moves"
        return f"draw: the stock ran out after {final.move_count} moves"

    def forfeit_text(self, record: GameRecord) -> str | None:
        """How a game that ended by a forfeit ended, in words; None when none did."""
        failure = record.failure
        if failure is None:
            return None
        seat, kind, message = failure["seat"], failure["kind"], failure["message"]
        if seat == self.me and kind == "quit":
            return "you quit the game"
        if seat == self.me:
            return f"your move failed ({message})"
        if kind == "crash":
            return f"the bot crashed ({message}): you win by forfeit"
        if kind == "illegal":
            return f"the bot chose an illegal move ({message}): you win by forfeit"
        return f"the bot gave up ({message}): you win"


def save_record(record: GameRecord, path: str | Path) -> None:
    """Append ``record`` to ``path`` as one JSON line, the tournament record format (its folder
    made when missing); ``conquian-replay PATH`` shows it.  Raises ``OSError`` when it cannot be written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record.to_dict()) + "\n")


__all__ = ["FIRST_CHOICES", "HumanGame", "build_bot", "check_seed", "random_seed", "save_record"]
