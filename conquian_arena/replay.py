"""Step through a recorded game of a results file, move by move.

Usage::

    conquian-replay RESULTS/games.jsonl --list
    conquian-replay RESULTS/games.jsonl --game N [--no-pause]
    conquian-replay RESULTS/games.jsonl --game N --video game.gif [--fps 2]
    conquian-replay RESULTS/games.jsonl --html replay.html [--game N ...]

(``python -m conquian_arena.replay`` is the same command.)  ``RESULTS`` may also be given
as the folder: ``RESULTS/games.jsonl`` is read.  The file has one game record per line
(:mod:`conquian_arena.record`); ``seats`` (a tournament's bot labels) name the players
when present.

``--list`` prints one line per game: its index, line number, players, who played first,
the winner and the number of moves.  ``--game N`` picks a game by the index ``--list``
shows: the ``index`` field that a tournament writes when every game has a distinct one,
otherwise the position in the file among the good lines, from 0.  It prints the deal,
the referee's table (both hands, :func:`conquian_env.render.render_text`), then every
move in card text with the table after it.  Between moves it waits for Enter (``q``
stops), unless ``--no-pause`` is given or the input is not a terminal.  Without
``--game`` the games are listed.

Problems are reported, never hidden: a corrupt line (bad JSON, missing fields) is named by
its line number and skipped; a game index out of range names the valid range; a record
whose deal or moves are impossible (a tampered file) stops with the move number and the
action; a recorded result the moves do not lead to is shown with a warning.  Exit status:
0 done, 1 a problem with the file or the game, 2 a bad command line.

From Python, :func:`main` takes the arguments plus ``input_fn``, ``output``, ``errors``
and ``interactive`` so tests can drive it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conquian_env.actions import action_to_str
from conquian_env.cards import CARD_NAMES
from conquian_env.game import GameState
from conquian_env.render import render_text
from conquian_env.rules import rules_of_record

from .console import run_console
from .narration import describe_move, hand_text
from .record import RecordedGame, ReplayError, load_records, printable, replay_states, result_problem

InputFn = Callable[[str], str]
OutputFn = Callable[[str], Any]

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2


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


def _deal_text(game: RecordedGame, state: GameState) -> str:
    """The deal of ``game``, from ``state``, the state right after it."""
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
    rules = rules_of_record(game.data)
    first = names[game.data["first"]]
    output(f"game {game.index} (line {game.line}): {names[0]} vs {names[1]}, {first} plays first, rules {rules}")
    output(f"recorded result: {game.result_text()} after {len(ids)} moves")
    output(_deal_text(game, states[0]))
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
    output("")
    problem = result_problem(game, final)
    if problem is not None:
        output(f"warning: {problem}")
        return
    failure = game.data.get("failure")
    if failure:
        output(f"the game was stopped by a failure: {game.result_text()}")
        if failure.get("message"):
            output(f"  {failure['message']}")
        return
    output(f"end: {game.result_text()}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conquian-replay", description="Step through a recorded Conquian game move by move."
    )
    parser.add_argument("path", help="a games.jsonl file, or a results folder holding one")
    parser.add_argument(
        "--game",
        type=int,
        action="append",
        default=None,
        help="index of the game to show (see --list); with --html it may be repeated (default there: all games)",
    )
    parser.add_argument("--list", action="store_true", help="list the games in the file")
    parser.add_argument("--no-pause", action="store_true", help="print the whole game without waiting for Enter")
    parser.add_argument(
        "--video",
        metavar="OUT.gif",
        help="write the game as an animated GIF of the rgb_array table (referee's view), one frame a move",
    )
    parser.add_argument("--fps", type=float, default=2.0, help="frames per second of --video (default: 2)")
    parser.add_argument(
        "--html",
        metavar="OUT.html",
        help="write one self-contained HTML page replaying the games (all, or those given with --game)",
    )
    return parser


def write_video(game: RecordedGame, path: str | Path, fps: float = 2.0) -> int:
    """Write ``game`` as an animated GIF, one frame after the deal and after each move;
    returns the number of frames.  Draws with Pillow (a dependency)."""
    from PIL import Image

    from conquian_env.image import render_rgb

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

    # a record is data from anywhere: what it holds is shown, never acted on by the terminal
    raw_output, raw_errors = output, errors

    def output(text: str) -> None:
        raw_output(printable(str(text), keep_lines=True))

    def errors(text: str) -> None:
        raw_errors(printable(str(text), keep_lines=True))

    args = _parser().parse_args(argv)
    try:
        games, problems = load_records(args.path)
    except OSError as err:
        errors(f"error: cannot read {args.path}: {err.strerror or err}")
        return EXIT_PROBLEM
    for problem in problems:
        errors(f"warning: {problem}")
    if not games:
        errors(f"error: no readable games in {args.path}")
        return EXIT_PROBLEM
    valid = ranges_text([g.index for g in games])
    if args.html:
        return _write_html(args, games, valid, output, errors)
    if args.game is not None and len(args.game) > 1:
        errors("error: give one --game N (several games go only into an --html page)")
        return EXIT_USAGE
    if args.list or args.game is None:
        output(list_text(games))
        if args.game is None and not args.list:
            output(f"(choose one with --game N; games: {valid})")
        if args.game is None:
            return EXIT_OK
    chosen = [g for g in games if g.index == args.game[0]]
    if not chosen:
        errors(f"error: there is no game {args.game[0]} in {args.path}: valid game indexes are {valid}")
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


def _write_html(
    args: argparse.Namespace, games: list[RecordedGame], valid: str, output: OutputFn, errors: OutputFn
) -> int:
    from .pages import write_replay_page

    if args.game is not None:
        by_index = {g.index: g for g in games}
        missing = [i for i in args.game if i not in by_index]
        if missing:
            errors(f"error: there is no game {missing[0]} in {args.path}: valid game indexes are {valid}")
            return EXIT_PROBLEM
        games = [by_index[i] for i in dict.fromkeys(args.game)]
    try:
        size = write_replay_page(games, args.html, title=f"Conquian replay: {Path(args.path).name}")
    except (ReplayError, OSError) as err:
        errors(f"error: {err}")
        return EXIT_PROBLEM
    count = "1 game" if len(games) == 1 else f"{len(games)} games"
    output(f"wrote {args.html}: {count}, {size / 1024:.0f} KiB (open it in a browser)")
    return EXIT_OK


def cli() -> int:
    """The ``conquian-replay`` console script."""
    return run_console(main)


if __name__ == "__main__":
    sys.exit(cli())
