"""Bots in any language: a program that plays over JSON lines on its standard input and output.

The spec ``exec:PATH[,time=1,startup=5,seed=N]`` plays the executable file ``PATH`` (a compiled
program, or a script with a ``#!`` line) in every command that takes a bot spec::

    conquian-evaluate exec:./mybot greedy --games 100
    conquian-play --opponent exec:./mybot,time=0.5

The program is started as a child process with no shell, in a process group of its own (stopped
whole, with whatever it started), a clean environment
(:data:`CLEAN_PATH` as ``PATH``, ``HOME`` and ``TMPDIR`` its own folder, ``LANG=C.UTF-8``, nothing
else) and its own working folder (a fresh temporary folder, removed when it stops).  Each line it
reads is one JSON object; it answers the ``act`` lines only, with one line holding a legal action
id (``17``, or ``{"action": 17}``).  The messages (:func:`start_message`, :func:`act_message`,
:func:`end_message`) and every field of them are tabled in the documentation's page "Bots in any
language"; the view in an ``act`` message is built from the player's observation alone
(:func:`view_fields`), so it never holds a card the player cannot see.

A program that does not answer within ``time`` seconds (its first answer may take ``startup``
seconds more), exits, or answers something that is not an action id loses the game: the bot
raises :class:`~agents.base.BotFailure` and the game loop records the failure, its message
starting with the reason (``timeout``, ``exited``, ``garbage``, ``start``); an id that is not legal
is judged by the game loop like any bot's.  The program is stopped then and started again for the
next game; a program that plays well keeps running from game to game (a ``start`` line before
each).  Needs a POSIX system (the pipes are waited on with ``select``).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import weakref
from pathlib import Path
from time import monotonic
from typing import Any

import numpy as np

from conquian_env.actions import NUM_ACTIONS, action_to_str
from conquian_env.cards import CARD_NAMES, NUM_CARDS
from conquian_env.observation import OBS_LAYOUT, OBS_SIZE, PHASE_VALUES, SOURCE_VALUES
from conquian_env.seeding import program_game_seed

from .base import Agent, BotFailure, PlayerView
from .catalog import bot
from .params import Real, bounded

#: the protocol's version, sent in every ``start`` line
PROTOCOL = 1
#: seconds a program has for each decision by default (``time=``)
DEFAULT_TIME = 1.0
#: seconds a freshly started program has on top of ``time`` for its first answer (``startup=``)
DEFAULT_STARTUP = 5.0
#: the ``PATH`` of the program's environment
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
#: the longest answer line read, in bytes: a longer one is garbage
MAX_LINE = 1 << 16
#: how many bytes of the program's standard error a failure message quotes (its last ones)
STDERR_TAIL = 300

# The view's pieces: name -> (start, length), from the observation's layout.
_PIECES = tuple((name, start, length) for name, start, length, _ in OBS_LAYOUT)
_CARD_PIECES = tuple(name for name, _, length in _PIECES if length == NUM_CARDS)
# slot -> (piece number, position in the piece): read every set slot of an observation once
_SLOT_PIECE = np.zeros(OBS_SIZE, dtype=np.int64)
_SLOT_AT = np.zeros(OBS_SIZE, dtype=np.int64)
for _number, (_name, _start, _length) in enumerate(_PIECES):
    _SLOT_PIECE[_start : _start + _length] = _number
    _SLOT_AT[_start : _start + _length] = np.arange(_length)
_STOCK = next(i for i, (name, _, _) in enumerate(_PIECES) if name == "stock_size")
_SIZES = {i for i, (name, _, _) in enumerate(_PIECES) if name in ("own_hand_size", "opponent_hand_size")}
_ONE_HOT = {
    i: values
    for i, (name, _, _) in enumerate(_PIECES)
    for piece, values in (("phase", PHASE_VALUES), ("source", SOURCE_VALUES))
    if name == piece
}
_NAMES = tuple(name for name, _, _ in _PIECES)
_IS_CARDS = tuple(length == NUM_CARDS for _, _, length in _PIECES)
_IS_FLAG = tuple(length == 1 for _, _, length in _PIECES)


def view_fields(observation: Any) -> dict[str, Any]:
    """The player's view of an ``act`` message: one field per piece of the observation
    (:data:`conquian_env.observation.OBS_LAYOUT`), in its order and under its name.  A card piece
    is the sorted list of its card ids (0..39); ``stock_size``, ``own_hand_size`` and
    ``opponent_hand_size`` are numbers; ``phase`` and ``source`` the names of their one-hot value;
    every 1-wide piece (``passed``, ``forced``, the rules) true or false.  Read from the
    observation alone: what the player cannot see is not in it."""
    obs = np.asarray(observation)
    if obs.shape != (OBS_SIZE,):
        raise ValueError(f"an observation has shape ({OBS_SIZE},), got {obs.shape}")
    view: dict[str, Any] = {}
    for number, name in enumerate(_NAMES):
        view[name] = [] if _IS_CARDS[number] else False if _IS_FLAG[number] else 0
    for slot in np.flatnonzero(obs).tolist():
        number, at = int(_SLOT_PIECE[slot]), int(_SLOT_AT[slot])
        name = _NAMES[number]
        if _IS_CARDS[number]:
            view[name].append(at)
        elif number == _STOCK:
            view[name] += 1
        elif number in _SIZES:
            view[name] = at
        elif number in _ONE_HOT:
            view[name] = _ONE_HOT[number][at]
        else:
            view[name] = True
    for number in _ONE_HOT:  # a one-hot piece with no slot set (never in a real observation) reads as its first value
        if view[_NAMES[number]] == 0:
            view[_NAMES[number]] = _ONE_HOT[number][0]
    return view


_START_TAIL = json.dumps(
    {"cards": list(CARD_NAMES), "actions": [action_to_str(a) for a in range(NUM_ACTIONS)]}, separators=(",", ":")
)[1:]


def start_message(seat: int, seed: int | None, time_limit: float) -> str:
    """The ``start`` line sent before each game (no answer is read): the protocol's version,
    the seat, the game's seed for the program (an integer below 2**53, or null), the seconds
    per decision, and the names of the 40 card ids and of the 85 action ids."""
    head = json.dumps(
        {"type": "start", "protocol": PROTOCOL, "seat": seat, "seed": seed, "time": time_limit},
        separators=(",", ":"),
    )
    return head[:-1] + "," + _START_TAIL + "\n"


def act_message(observation: Any, action_mask: Any, seat: int) -> str:
    """The ``act`` line of one decision: the seat, the legal action ids (ascending) and the
    player's view (:func:`view_fields`); answered by one line holding one of the legal ids."""
    legal = np.flatnonzero(np.asarray(action_mask)).tolist()
    message = {"type": "act", "seat": seat, "legal": legal, "view": view_fields(observation)}
    return json.dumps(message, separators=(",", ":")) + "\n"


def end_message(seat: int, winner: int | None, failure: dict[str, Any] | None) -> str:
    """The ``end`` line sent after each game (no answer is read): the seat, the winning seat
    (null for a draw), the result for this seat and, when a player failed, who and why."""
    result = "draw" if winner is None else "win" if winner == seat else "loss"
    message: dict[str, Any] = {"type": "end", "seat": seat, "winner": winner, "result": result}
    if failure is not None:
        message["failure"] = {k: failure.get(k) for k in ("seat", "kind", "message")}
    return json.dumps(message, separators=(",", ":")) + "\n"


def read_answer(line: bytes) -> int:
    """The action id of an answer line (``17`` or ``{"action": 17}``), or :class:`BotFailure`
    (``garbage``) when the line holds none.  Whether the id is legal is the game loop's to judge."""
    text = line.decode("utf-8", errors="replace").strip()
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        value = value.get("action")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    shown = text if len(text) <= 80 else text[:77] + "..."
    raise BotFailure("illegal", f"garbage: the answer {shown!r} is no action id (expected a line like 17 or "
                                '{"action": 17})')  # fmt: skip


def clean_environment(folder: str) -> dict[str, str]:
    """The whole environment a program starts with: nothing of the caller's is passed on."""
    return {"PATH": CLEAN_PATH, "HOME": folder, "TMPDIR": folder, "LANG": "C.UTF-8"}


#: the working folders' names: ``conquian-exec-PID-...``, PID the process that started the program
FOLDER_PREFIX = "conquian-exec-"
_swept = False


def sweep_folders() -> int:
    """Remove the working folders that processes gone before could not remove (a tournament's pool
    worker is killed at the end, its cleanup never runs); returns how many.  Once per process."""
    global _swept
    if _swept:
        return 0
    _swept, removed = True, 0
    root = Path(tempfile.gettempdir())
    for folder in root.glob(FOLDER_PREFIX + "*-*"):
        pid = folder.name[len(FOLDER_PREFIX) :].partition("-")[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its process is alive: its folder is in use
        except ProcessLookupError:
            pass
        except OSError:  # alive, another user's
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


class _Running:
    """One started program: its process, its folder, its pipes (non-blocking) and what it wrote."""

    def __init__(self, path: str):
        sweep_folders()
        self.folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        self.stderr = open(os.path.join(self.folder, ".stderr"), "w+b")  # noqa: SIM115 - closed in stop()
        try:
            self.process = subprocess.Popen(  # noqa: S603 - the user's own program, no shell
                [path],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                cwd=self.folder,
                env=clean_environment(self.folder),
                close_fds=True,
                bufsize=0,
                start_new_session=True,  # its own process group: stopped whole (a script's children too), no Ctrl-C
            )
        except OSError as err:
            self.stop()
            raise BotFailure("crash", f"start: the program {path!r} could not be started ({err})") from None
        assert self.process.stdin is not None and self.process.stdout is not None
        self.write_fd, self.read_fd = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self.write_fd, False)
        os.set_blocking(self.read_fd, False)
        self.buffer = bytearray()
        self.answered = False
        self.finalizer = weakref.finalize(self, _stop, self.process, self.folder, self.stderr)

    def stderr_tail(self) -> str:
        try:
            self.stderr.flush()
            size = os.fstat(self.stderr.fileno()).st_size
            self.stderr.seek(max(0, size - STDERR_TAIL))
            text = self.stderr.read().decode("utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return ""
        return f"; its last words on standard error: {text!r}" if text else ""

    def exited(self, when: str) -> BotFailure:
        try:
            code = self.process.wait(timeout=0.5)
            how = f"with code {code}" if code >= 0 else f"killed by signal {-code}"
        except subprocess.TimeoutExpired:
            how = "its output closed"
        return BotFailure("crash", f"exited: the program ended ({how}) {when}{self.stderr_tail()}")

    def send(self, line: bytes, deadline: float, limit: float) -> None:
        view = memoryview(line)
        while view:
            try:
                view = view[os.write(self.write_fd, view) :]
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError):
                raise self.exited("while being written to") from None
            if view:
                left = deadline - monotonic()
                if left <= 0:
                    raise BotFailure("crash", f"timeout: the program read none of its input for {limit:g} s")
                select.select([], [self.write_fd], [], left)

    def receive(self, deadline: float, limit: float) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if end > MAX_LINE or end < 0 and len(self.buffer) > MAX_LINE:
                raise BotFailure("illegal", f"garbage: an answer line longer than {MAX_LINE} bytes")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            left = deadline - monotonic()
            if left <= 0:
                raise BotFailure("crash", f"timeout: no answer within {limit:g} s{self.stderr_tail()}")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.read_fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise self.exited("before answering")
                self.buffer += chunk

    def stop(self, grace: float = 0.0) -> None:
        """Close the program's input, give it ``grace`` seconds to exit, then kill it; remove its folder."""
        finalizer = getattr(self, "finalizer", None)
        if finalizer is not None:
            finalizer.detach()
        _stop(getattr(self, "process", None), self.folder, self.stderr, grace)


def _stop(process: subprocess.Popen | None, folder: str, stderr: Any, grace: float = 0.5) -> None:
    if process is not None:
        for pipe in (process.stdin, process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
        if grace > 0:
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the program and whatever it started
        except (ProcessLookupError, PermissionError):
            pass
        if process.poll() is None:
            process.kill()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    try:
        stderr.close()
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


@bot(
    "exec",
    "a program in any language, playing JSON lines over stdin/stdout (docs: Bots in any language)",
    params={"time": "seconds per decision", "startup": "seconds more for a fresh program's first answer"},
    positional="PATH",
    needs="an exec bot needs the program to start: exec:PATH (an executable file)",
)
class ProgramAgent(Agent):
    """The program at ``path`` as a bot (spec ``exec:PATH``): see the module docstring."""

    name = "exec"

    @bounded(time=Real(0.001, 3600), startup=Real(0, 3600))
    def __init__(
        self,
        path: str | None = None,
        time: float = DEFAULT_TIME,
        startup: float = DEFAULT_STARTUP,
        seed: int | None = None,
    ):
        if path is None:
            raise ValueError("an exec bot needs the program to start: exec:PATH (an executable file)")
        file = Path(path).expanduser()
        if not file.is_file():
            raise ValueError(f"no program {str(file)!r}: exec:PATH names an executable file")
        if not os.access(file, os.X_OK):
            raise ValueError(
                f"the program {str(file)!r} is not executable: make it so (chmod +x), with a #! line if it is a script"
            )
        self.path = str(file.resolve())
        self.time, self.startup, self.seed = time, startup, seed
        self.name = f"exec:{file.name}"
        self.running: _Running | None = None

    def _program(self, new_game: bool) -> _Running:
        """The running program; started when there is none, and, at a new game, when it has exited.
        One that exits during a game has failed in that game."""
        if self.running is not None and self.running.process.poll() is not None and not new_game:
            failure = self.running.exited("between two decisions")
            self.close(grace=0.0)
            raise failure
        if self.running is None or self.running.process.poll() is not None:
            self.close(grace=0.0)
            self.running = _Running(self.path)
        return self.running

    def _exchange(self, message: str, answer: bool, new_game: bool = False) -> bytes | None:
        running = self._program(new_game)
        limit = self.time + (0.0 if running.answered else self.startup)
        deadline = monotonic() + limit
        try:
            running.send(message.encode(), deadline, limit)
            if not answer:
                return None
            line = running.receive(deadline, limit)
            running.answered = True
            return line
        except BotFailure:
            self.close(grace=0.0)  # a program that failed is stopped; the next game starts it afresh
            raise

    def reset(self, player: int, seed: int | None = None) -> None:
        told = None if seed is None else program_game_seed(seed, self.seed)
        self._exchange(start_message(player, told, self.time), answer=False, new_game=True)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        line = self._exchange(act_message(observation, action_mask, view.player), answer=True)
        assert line is not None
        try:
            return read_answer(line)
        except BotFailure:
            self.close(grace=0.0)
            raise

    def end_game(self, player: int, winner: int | None, failure: dict[str, Any] | None) -> None:
        if self.running is not None and self.running.process.poll() is None:
            self._exchange(end_message(player, winner, failure), answer=False)

    def close(self, grace: float = 1.0) -> None:
        """Stop the program: its input is closed and it has ``grace`` seconds to exit before it is
        killed (it is started again by the next game)."""
        if self.running is not None:
            running, self.running = self.running, None
            running.stop(grace)


__all__ = [
    "CLEAN_PATH",
    "DEFAULT_STARTUP",
    "DEFAULT_TIME",
    "PROTOCOL",
    "ProgramAgent",
    "act_message",
    "clean_environment",
    "end_message",
    "read_answer",
    "start_message",
    "view_fields",
]
