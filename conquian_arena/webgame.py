"""The person in a browser and their game, for :mod:`conquian_arena.webplay` (``conquian-play --web``).

:class:`WebHumanAgent` is an :class:`agents.base.Agent` (a :class:`~conquian_arena.human.DraftingPlayer`)
whose ``act`` publishes what the player sees (from the :class:`~conquian_env.view.PlayerView` alone)
and waits for the page's answer on a queue; :class:`WebGame` (a
:class:`~conquian_arena.human_game.HumanGame`, as in the terminal) plays it against a bot through the
one game loop, :func:`conquian_arena.match.play_game`, in a thread, and keeps the state the page polls.
The server, its API and its limits are :mod:`conquian_arena.webplay`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.base import Resign
from conquian_env.actions import action_to_str, str_to_action
from conquian_env.cards import cards_of
from conquian_env.game import MELD, GameState, new_game
from conquian_env.render import meld_groups
from conquian_env.view import PlayerView

from .human import DraftingPlayer, MeldDraft, back_text, question_text
from .human_game import HumanGame, Setup, save_record
from .narration import describe_move, source_text
from .record import GameRecord, load_records

_STOP = object()  # put on a player's queue to end the game when the server stops
_STOPPED = "the server stopped"  # the forfeit's message then (such a game is not saved)
#: the move text that gives the game up
RESIGN = "resign"
#: the longest move text the API takes (the longest move, "discard 10H", has 11 characters)
MAX_MOVE_CHARS = 40


class WebHumanAgent(DraftingPlayer):
    """A person at the browser, played like any bot.

    ``act`` computes what the player may do (a :class:`~conquian_arena.human.MeldDraft`
    holds a meld until it is finished), publishes the player's view to ``game`` and waits
    on :attr:`inbox` for the page's answer: a move text (``"take"``, ``"meld 7H"`` ...),
    ``"back"``, ``"resign"`` (raises :class:`agents.base.Resign`) or the server's stop.
    """

    name = "you"

    def __init__(self, game: WebGame, auto_pass: bool = False):
        super().__init__(auto_pass)
        self.game = game
        self.inbox: queue.Queue[Any] = queue.Queue()
        self._error = ""  # shown with the next question (e.g. nothing to take back)

    def tell_only_move(self, view: PlayerView, action: int) -> None:
        self.game.say(f"(only one move: {action_to_str(action)})", view.player)

    def ask_move(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        error = self._error
        while True:
            self.game.publish_turn(view, draft, legal, error)
            answer = self.inbox.get()
            error = self._error = ""
            if answer is _STOP:
                raise Resign(_STOPPED)
            text = str(answer).strip().lower()
            if text == RESIGN:
                raise Resign("the person resigned")
            if text == "back":
                if draft.back() is None:
                    self._error = "nothing to take back"
                return None
            try:
                action = str_to_action(text)
            except ValueError:
                shown = repr(answer) if len(repr(answer)) <= MAX_MOVE_CHARS + 2 else repr(str(answer)[:20]) + "..."
                error = f"{shown} is not a move"
                continue
            if action not in legal:
                error = f"'{action_to_str(action)}' is not a legal move now"
                continue
            return action


class WebGame(HumanGame):
    """One game between the person and a bot, played in a thread, and what the page shows of it.

    The game thread publishes snapshots (JSON-ready dicts, each with a new ``version``);
    the web handlers only read them (:meth:`wait`) and put answers on the person's queue.
    Raises ``ValueError`` as :class:`~conquian_arena.human_game.HumanGame` does.
    """

    def __init__(
        self,
        setup: Setup,
        save: Path | None = None,
        on_saved: Callable[[GameRecord], None] | None = None,
        number: int = 0,
    ):
        super().__init__(setup)
        self.number = number  # the how-manieth game of the server, from 0
        self.save_path = save
        self.on_saved = on_saved
        self.human = WebHumanAgent(self, auto_pass=setup.auto_pass)
        self.record: GameRecord | None = None
        self.stopped = False
        self._cond = threading.Condition()
        self._version = 0
        self._answered = -1  # the last version the person answered
        self._log: list[dict[str, Any]] = []
        self._snap: dict[str, Any] = {
            "status": "thinking",
            "names": list(self.names),
            "me": self.me,
            "bot": self.bot_name,
            "opponent": setup.opponent,
            "seed": None,  # told when the game is over: the seed gives away the whole deal
            "rules": self.rules.name,
            "game": number,
        }
        start = new_game(hands=self.hands, stock=self.stock, first=self.first, rules=self.rules)
        view = PlayerView(start, self.me)
        self._snap.update(_table(view, self.names), legal=[], back="", error="", question="", log=[])
        self._thread = threading.Thread(target=self._run, name="conquian-web-game", daemon=True)

    # ------------------------------------------------------------------ the game thread
    def start(self) -> WebGame:
        self._thread.start()
        return self

    def _run(self) -> None:
        self.say(self.opening, self.first)

        def on_move(before: GameState, action: int, after: GameState) -> None:
            for line in describe_move(before, action, after, self.names):
                self._log.append({"seat": before.player, "text": line})
            if not after.is_terminal():
                table = _table(PlayerView(after, self.me), self.names)
                self._publish(status="thinking", **table, legal=[], back="", error="")

        try:
            record = self.play(self.human, on_move=on_move)
        except Exception as err:  # the loop itself failing is a bug; show it rather than hang the page
            self._publish(status="over", result=f"the game stopped: {err}", legal=[], back="")
            return
        self.record = record
        try:
            self._finish(record)
        except Exception as err:  # the page is told the game is over whatever fails after it
            self._publish(status="over", result=f"game over; then something failed: {_one_line(err)}", legal=[],
                          back="")  # fmt: skip

    def _saved_text(self, record: GameRecord) -> tuple[str, int | None]:
        """Save ``record`` to the save file; the line the page shows, and the game's number in the
        file (None when it could not be saved or read back).  Whatever the save or the read raises
        becomes that line: the game is over all the same."""
        path = self.save_path
        try:
            save_record(record, path)
        except Exception as err:  # a folder, a full disk, no permission: said, never a dead game thread
            return f"could not save the game to {path}: {_one_line(err)}", None
        try:
            games, _ = load_records(path)  # a corrupt line of an earlier game is skipped, not fatal
        except Exception as err:
            return f"saved to {path}, but the file cannot be read back: {_one_line(err)}", None
        replay_index = games[-1].index if games else None
        return f"saved to {path}: conquian-replay {path} --game {replay_index}", replay_index

    def _finish(self, record: GameRecord) -> None:
        final = record.replay()[-1]
        failure = record.failure
        self.stopped = failure is not None and failure["seat"] == self.me and failure["message"] == _STOPPED
        forfeit = None if self.stopped else self.forfeit_text(record)
        lines = [text for text in (forfeit, self.result_text(final)) if text is not None]
        saved, replay_index = "", None
        if self.save_path is not None and not self.stopped:
            saved, replay_index = self._saved_text(record)
        if self.on_saved is not None and not self.stopped:
            self.on_saved(record)
        view = PlayerView(final, self.me)
        self._publish(
            status="over",
            **_table(view, self.names),
            result="; ".join(lines) or "game over",
            seed=str(self.seed),  # as text: a 63-bit seed is not exact as a JavaScript number
            winner=record.winner,
            saved=saved,
            replay_index=replay_index,
            reveal={
                "hands": [cards_of(final.hands[0]), cards_of(final.hands[1])],
                "melds": [meld_groups(final.melds[0]), meld_groups(final.melds[1])],
            },
            legal=[],
            back="",
            question="",
            error="",
        )

    def say(self, text: str, seat: int) -> None:
        """Add a line to the narration (published with the next snapshot)."""
        self._log.append({"seat": seat, "text": text})

    def publish_turn(self, view: PlayerView, draft: MeldDraft, legal: list[int], error: str) -> None:
        """The person's turn: the table as they see it, the question and the moves they may click."""
        self._publish(
            status="your-move",
            **_table(view, self.names, draft),
            question=question_text(view, self.names, draft),
            legal=[action_to_str(a) for a in legal],
            back=back_text(draft),
            error=error,
        )

    def _publish(self, **changes: Any) -> None:
        with self._cond:
            self._version += 1
            self._snap.update(changes)
            self._snap["version"] = self._version
            self._snap["log"] = list(self._log)
            self._cond.notify_all()

    # ------------------------------------------------------------------ the web handlers' side
    def snapshot(self) -> dict[str, Any]:
        with self._cond:
            return dict(self._snap, version=self._version)

    def wait(self, after: int, timeout: float) -> dict[str, Any]:
        """The first snapshot newer than version ``after`` (or the current one after ``timeout`` s)."""
        with self._cond:
            self._cond.wait_for(lambda: self._version > after, timeout)
            return dict(self._snap, version=self._version)

    def wake(self) -> None:
        """Answer every request waiting for a newer state (the page then asks again)."""
        self._publish()

    def answer(self, move: Any) -> None:
        self.human.inbox.put(move)

    def submit(self, move: str, version: Any) -> bool:
        """Hand the person's answer to state ``version`` to the game, once: False when that is
        not the state waiting for the person (a stale page, a double click)."""
        with self._cond:
            if self._snap["status"] != "your-move" or version != self._version or self._answered == version:
                return False
            self._answered = version
            self.human.inbox.put(move)
            return True

    def stop(self, timeout: float = 5.0) -> None:
        """End the game (it is not saved) and wait for its thread."""
        if self._thread.is_alive():
            self.human.inbox.put(_STOP)
            self._thread.join(timeout)

    @property
    def over(self) -> bool:
        return self.snapshot()["status"] == "over"


def _table(view: PlayerView, names: Sequence[str], draft: MeldDraft | None = None) -> dict[str, Any]:
    """What the person sees of the table (nothing the view does not hold); ``names`` per seat."""
    chosen = view.chosen | (draft.cards if draft is not None else 0)
    melding = view.phase == MELD or (draft is not None and draft.taking)
    face = view.face_up
    mine = view.to_move == view.player
    return {
        "hand": cards_of(view.hand & ~chosen),
        "meld": meld_groups(view.meld),
        "opp_meld": meld_groups(view.opponent_meld),
        "opp_hand": view.opponent_hand_size,
        "face": face,
        "face_text": ""
        if face < 0 or melding
        else source_text(view.face_up_source, view.face_up_owner, view.passed, names),
        "laying": [face, *cards_of(chosen)] if melding and face >= 0 else [],
        "laying_mine": bool(melding and mine),
        "stock": view.stock_left,
        "dead": cards_of(view.dead),
        "to_move": view.to_move,
        "move": view.move_count,
    }


def _one_line(err: BaseException) -> str:
    """``err`` as one short line (its type when it says nothing)."""
    text = " ".join(str(err).split())[:200]
    return text or type(err).__name__
