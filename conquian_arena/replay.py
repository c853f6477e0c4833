"""Step through a recorded game of a results file, move by move.

Usage::

    python -m conquian_env.replay RESULTS/games.jsonl --list
    python -m conquian_env.replay RESULTS/games.jsonl --game N [--no-pause]

``RESULTS`` may also be given as the folder: ``RESULTS/games.jsonl`` is read.  The file has
one JSON object per line, each holding at least the fields of
:class:`agents.match.GameRecord` (``hands``, ``stock``, ``first``, ``forcing``,
``players``, ``actions`` as text); ``winner``, ``moves``, ``failure`` and any other keys
(``index``, ``pair``, ``seats``, ``specs`` ...) are tolerated; ``seats`` (evaluate.py's bot
labels) name the players when present.

``--list`` prints one line per game: its index, line number, players, who played first,
the winner and the number of moves.  ``--game N`` picks a game by the index ``--list``
shows: the ``index`` field that evaluate.py writes when every game has a distinct one,
otherwise the position in the file among the good lines, from 0.  It prints the deal,
the referee's table (both hands, :func:`conquian_env.render.render_text`), then every
move in card text with the table after it.  Between moves it waits for Enter (``q``
stops), unless ``--no-pause`` is given or the input is not a terminal.  Without
``--game`` the games are listed.

Problems are reported, never hidden: a corrupt line (bad JSON, missing fields) is named by
its line number and skipped; a game index out of range names the valid range; a record
whose deal or moves are impossible (a tampered file) stops with the move number and the
action.  Exit status: 0 done, 1 a problem with the file or the game, 2 a bad command line.

From Python, :func:`main` takes the arguments plus ``input_fn``, ``output``, ``errors``
and ``interactive`` so tests can drive it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .actions import action_to_str, str_to_action
from .cards import CARD_NAMES
from .game import GameState, IllegalActionError, new_game
from .play import describe_move, hand_text
from .render import render_text

InputFn = Callable[[str], str]
OutputFn = Callable[[str], Any]

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2

REQUIRED_FIELDS = ("hands", "stock", "first", "forcing", "players", "actions")


class ReplayError(ValueError):
    """A record that cannot be replayed: impossible deal or an illegal or unknown action."""


@dataclass
class RecordedGame:
    """One game of a results file: the index ``--game`` selects it by, and its line number."""

    index: int
    line: int
    data: dict[str, Any]

    @property
    def players(self) -> list[str]:
        """Seat labels of evaluate.py (``seats``) when present, else the bot names (``players``)."""
        seats = self.data.get("seats")
        if isinstance(seats, list) and len(seats) == 2 and all(isinstance(x, str) for x in seats):
            return seats
        return [str(p) for p in self.data["players"]]

    @property
    def names(self) -> tuple[str, str]:
        """Seat labels for tables: ``"p0 random"``, ``"p1 greedy"``."""
        p = self.players
        return (f"p0 {p[0]}", f"p1 {p[1]}")

    @property
    def actions(self) -> list[str]:
        return self.data["actions"]

    def result_text(self) -> str:
        """The recorded result: ``"p1 greedy won"``, ``"draw"``, plus a failure if any."""
        winner = self.data.get("winner")
        failure = self.data.get("failure")
        text = "draw" if winner is None else f"{self.names[winner]} won" if winner in (0, 1) else f"winner {winner!r}"
        if failure:
            seat = failure.get("seat") if isinstance(failure, dict) else None
            kind = failure.get("kind", "failure") if isinstance(failure, dict) else "failure"
            who = self.names[seat] if seat in (0, 1) else "a player"
            text += f" ({who} lost by {kind})"
        return text


def _check_record(data: Any) -> str | None:
    """Why ``data`` is not a game record, or None when its fields have the right shape."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    missing = [k for k in REQUIRED_FIELDS if k not in data]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    hands, players, actions = data["hands"], data["players"], data["actions"]
    if not (isinstance(hands, list) and len(hands) == 2 and all(isinstance(h, list) for h in hands)):
        return "'hands' must be a list of two lists of cards"
    if not isinstance(data["stock"], list):
        return "'stock' must be a list of cards"
    if data["first"] not in (0, 1) or isinstance(data["first"], bool):
        return f"'first' must be 0 or 1, got {data['first']!r}"
    if not isinstance(data["forcing"], bool):
        return f"'forcing' must be true or false, got {data['forcing']!r}"
    if not (isinstance(players, list) and len(players) == 2):
        return "'players' must be a list of two names"
    if not (isinstance(actions, list) and all(isinstance(a, str) for a in actions)):
        return "'actions' must be a list of action texts"
    winner = data.get("winner")
    if winner is not None and (winner not in (0, 1) or isinstance(winner, bool)):
        return f"'winner' must be 0, 1 or null, got {winner!r}"
    return None


def load_games(path: str | Path) -> tuple[list[RecordedGame], list[str]]:
    """The good records of a ``games.jsonl`` file and a message per corrupt line (skipped).

    Raises ``OSError`` when the file cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "games.jsonl"
    games: list[RecordedGame] = []
    problems: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as err:
                problems.append(f"{path}, line {line_no}: corrupt, skipped (not valid JSON: {err.msg})")
                continue
            why = _check_record(data)
            if why:
                problems.append(f"{path}, line {line_no}: corrupt, skipped ({why})")
                continue
            games.append(RecordedGame(len(games), line_no, data))
    # evaluate.py numbers its games ("index") and writes them in the order they finish
    ids = [g.data.get("index") for g in games]
    if games and all(isinstance(i, int) and not isinstance(i, bool) for i in ids) and len(set(ids)) == len(ids):
        for g in games:
            g.index = g.data["index"]
        games.sort(key=lambda g: g.index)
    return games, problems


def ranges_text(ids: Sequence[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0 to 2, 5, 7 to 8"``."""
    parts: list[str] = []
    ids = sorted(ids)
    start = prev = ids[0]
    for i in [*ids[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        parts.append(str(start) if start == prev else f"{start} to {prev}")
        if i is not None:
            start = prev = i
    return ", ".join(parts)


def replay_states(game: RecordedGame) -> tuple[list[GameState], list[int]]:
    """The states after the deal and after every move, and the action ids.

    Raises :class:`ReplayError` naming the move number (from 1) and the action when the
    record's deal or one of its actions is impossible.
    """
    data = game.data
    try:
        state = new_game(hands=data["hands"], stock=data["stock"], first=data["first"], forcing=data["forcing"])
    except ValueError as err:
        raise ReplayError(f"game {game.index} (line {game.line}): impossible deal: {err}") from None
    states = [state.clone()]
    ids: list[int] = []
    for move, text in enumerate(game.actions, 1):
        where = f"game {game.index} (line {game.line}), move {move}"
        try:
            action = str_to_action(text)
        except ValueError as err:
            raise ReplayError(f"{where}: {text!r} is not an action ({err})") from None
        if state.is_terminal():
            raise ReplayError(f"{where}: action {text!r} comes after the end of the game")
        try:
            state.apply(action)
        except IllegalActionError:
            legal = ", ".join(action_to_str(a) for a in state.legal_actions())
            player = game.names[state.player]
            raise ReplayError(f"{where}: action {text!r} by {player} is illegal here; legal moves: {legal}") from None
        ids.append(action)
        states.append(state.clone())
    return states, ids


def list_text(games: Sequence[RecordedGame]) -> str:
    """A table of the games: index, line, players, first, result, moves."""
    rows = [("game", "line", "players", "first", "result", "moves")]
    for g in games:
        moves = g.data.get("moves", len(g.actions))
        rows.append(
            (
                str(g.index),
                str(g.line),
                f"{g.players[0]} vs {g.players[1]}",
                f"p{g.data['first']}",
                g.result_text(),
                str(moves),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _deal_text(game: RecordedGame) -> str:
    data = game.data
    state = new_game(hands=data["hands"], stock=data["stock"], first=data["first"], forcing=data["forcing"])
    width = max(len(n) for n in game.names)
    lines = ["deal:"]
    for p in (0, 1):
        lines.append(f"  {game.names[p]:<{width}}  {hand_text(state.hands[p])}")
    lines.append(f"  {'stock':<{width}}  {' '.join(CARD_NAMES[c] for c in state.stock)} (top first)")
    return "\n".join(lines)


def show_game(
    game: RecordedGame,
    output: OutputFn,
    input_fn: InputFn | None = None,
) -> None:
    """Print the whole game; with ``input_fn`` wait for Enter after each move (``q`` stops).

    Raises :class:`ReplayError` (before printing anything) when the record is impossible.
    """
    states, ids = replay_states(game)
    names = game.names
    forcing = "on" if game.data["forcing"] else "off"
    first = names[game.data["first"]]
    output(f"game {game.index} (line {game.line}): {names[0]} vs {names[1]}, {first} plays first, forcing {forcing}")
    output(f"recorded result: {game.result_text()} after {len(ids)} moves")
    output(_deal_text(game))
    output("")
    output(render_text(states[0], names))
    for move, action in enumerate(ids, 1):
        if input_fn is not None:
            try:
                answer = input_fn(f"[move {move}/{len(ids)}] Enter: next, q: stop> ")
            except EOFError:
                answer = "q"
            if answer.strip().lower() in ("q", "quit", "exit"):
                output("stopped")
                return
        before, after = states[move - 1], states[move]
        output("")
        output(f"move {move}/{len(ids)}: {action_to_str(action)}")
        for line in describe_move(before, action, after, names):
            output(f"  {line}")
        output(render_text(after, names))
    _show_ending(game, states[-1], output)


def _show_ending(game: RecordedGame, final: GameState, output: OutputFn) -> None:
    failure = game.data.get("failure")
    winner = game.data.get("winner")
    output("")
    if failure:
        message = failure.get("message", "") if isinstance(failure, dict) else str(failure)
        output(f"the game was stopped by a failure: {game.result_text()}")
        if message:
            output(f"  {message}")
        return
    if not final.is_terminal():
        output(f"warning: the record ends before the game is over (after {final.move_count} moves)")
        return
    replayed = final.winner if final.winner >= 0 else None
    if replayed != winner:
        shown = "draw" if replayed is None else f"{game.names[replayed]} won"
        output(f"warning: the record says {game.result_text()} but the moves give {shown}")
    else:
        output(f"end: {game.result_text()}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conquian_env.replay", description="Step through a recorded Conquian game move by move."
    )
    parser.add_argument("path", help="a games.jsonl file, or a results folder holding one")
    parser.add_argument("--game", type=int, default=None, help="index of the game to show (see --list)")
    parser.add_argument("--list", action="store_true", help="list the games in the file")
    parser.add_argument("--no-pause", action="store_true", help="print the whole game without waiting for Enter")
    parser.add_argument(
        "--video",
        metavar="OUT.gif",
        help="write the game as an animated GIF of the rgb_array table (referee's view), one frame a move",
    )
    parser.add_argument("--fps", type=float, default=2.0, help="frames per second of --video (default: 2)")
    return parser


def write_video(game: RecordedGame, path: str | Path, fps: float = 2.0) -> int:
    """Write ``game`` as an animated GIF, one frame after the deal and after each move;
    returns the number of frames.  Needs Pillow (the ``render`` extra)."""
    from PIL import Image

    from .image import render_rgb

    if not fps > 0:
        raise ValueError(f"fps must be positive, got {fps!r}")
    states, _ = replay_states(game)
    frames = [Image.fromarray(render_rgb(state, game.names)) for state in states]
    hold = [round(1000 / fps)] * len(frames)
    hold[-1] = max(hold[-1], 3000)  # linger on the end of the game
    frames[0].save(
        Path(path), save_all=True, append_images=frames[1:], duration=hold, loop=0, optimize=False, disposal=1
    )
    return len(frames)


def main(
    argv: Sequence[str] | None = None,
    input_fn: InputFn = input,
    output: OutputFn = print,
    errors: OutputFn | None = None,
    interactive: bool | None = None,
) -> int:
    """Run the command line; returns the exit status (see the module docstring).

    ``errors`` receives problem messages (default: standard error); ``interactive``
    says whether to pause between moves (default: when standard input is a terminal).
    """
    if errors is None:

        def errors(text: str) -> None:
            print(text, file=sys.stderr)

    args = _parser().parse_args(argv)
    try:
        games, problems = load_games(args.path)
    except OSError as err:
        errors(f"error: cannot read {args.path}: {err.strerror or err}")
        return EXIT_PROBLEM
    for problem in problems:
        errors(f"warning: {problem}")
    if not games:
        errors(f"error: no readable games in {args.path}")
        return EXIT_PROBLEM
    valid = ranges_text([g.index for g in games])
    if args.list or args.game is None:
        output(list_text(games))
        if args.game is None and not args.list:
            output(f"(choose one with --game N; games: {valid})")
        if args.game is None:
            return EXIT_OK
    chosen = [g for g in games if g.index == args.game]
    if not chosen:
        errors(f"error: there is no game {args.game} in {args.path}: valid game indexes are {valid}")
        return EXIT_PROBLEM
    if interactive is None:
        interactive = sys.stdin.isatty()
    pause = interactive and not args.no_pause
    if args.video:
        try:
            n = write_video(chosen[0], args.video, args.fps)
        except (ReplayError, ValueError, ImportError, OSError) as err:
            errors(f"error: {err}")
            return EXIT_PROBLEM
        output(f"wrote {args.video}: {n} frames")
        return EXIT_OK
    try:
        show_game(chosen[0], output, input_fn if pause else None)
    except ReplayError as err:
        errors(f"error: {err}")
        return EXIT_PROBLEM
    return EXIT_OK


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("\ninterrupted")
        sys.exit(130)
    except BrokenPipeError:  # e.g. piped into head
        sys.exit(0)
