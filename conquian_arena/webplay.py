"""Play Conquian against a bot in the browser: ``conquian-play --web``.

Usage::

    conquian-play --web --opponent greedy [--port 8000] [--host 127.0.0.1] [--seed N] [--forcing]
                  [--first you|bot] [--seat 0|1] [--auto-pass] [--save FILE] [--open]

serves a page at ``http://127.0.0.1:8000/`` (only this machine can reach it unless
``--host`` says otherwise) where a person plays any bot spec (``random``, ``greedy``,
``ismcts:iterations=200``, ``ppo:model.zip`` ...) with the mouse: click a hand card to lay
it with the taken card or to discard it, and the buttons take, refuse, finish, back,
force, no force; only the legal moves can be clicked.  A meld is collected before it is
played (:class:`~conquian_arena.play.MeldDraft`): *back* takes the last card, or the
take, back.  The bot's moves are narrated (:func:`~conquian_arena.play.describe_move`).
Each finished game is appended to ``--save`` (default ``results/play/games.jsonl``) in
the tournament record format, so ``conquian-replay FILE`` shows it, and the page links
to its replay (:mod:`conquian_arena.pages`).  *New game* deals again.

The person is a player like any bot: :class:`WebHumanAgent` is an
:class:`agents.base.Agent` whose ``act`` publishes what the player sees (from the
:class:`~conquian_env.view.PlayerView` alone) and waits for the page's answer on a
queue, while the game is played by the one game loop,
:func:`conquian_arena.match.play_game`, in a thread.

Flask (the ``web`` extra, ``pip install 'conquian-env[web]'``) serves it: the game loop
blocks a thread per decision, and Flask's plain synchronous handlers hand moves across
with a queue and a condition variable, no event loop to bridge; its server (Werkzeug,
threaded) is enough for one person on localhost.  The API (JSON; every call carries the
page's token in ``X-Conquian-Token``, and requests naming another host are refused, so
other web sites cannot drive it): ``GET /api/state?game=N&after=V`` (waits up to 20 s
for a state of game ``N`` newer than version ``V``), ``POST /api/move`` ``{"move": "meld 7H", "version": V}``
(``"back"`` takes back; any other body, or a move over :data:`MAX_MOVE_CHARS`
characters, is answered 400), ``POST /api/resign``, ``POST /api/new``; ``GET /replay`` replays
the games played since the server started.  ``GET /api/state?game=N&after=V`` answers at
once when game ``N`` is no longer the current one.  At most :data:`MAX_WAITING` requests
wait at once (a long poll beyond them is answered 429, a move or resign beyond them gets
the current state), so polls cannot pile up threads; every response forbids framing
(:data:`SECURITY_HEADERS`).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import queue
import random
import secrets
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.base import Resign
from agents.registry import make_agent
from conquian_env.actions import action_to_str, str_to_action
from conquian_env.cards import cards_of
from conquian_env.game import MELD, GameState, new_game
from conquian_env.render import meld_groups
from conquian_env.seeding import derive_seed
from conquian_env.view import PlayerView

from .match import deal_for_seed, play_game
from .pages import CARD_CSS, CARD_JS, SUIT_SYMBOLS, json_for_script, replay_page
from .play import DraftingPlayer, MeldDraft, _source_text, _tell_forfeit, back_text, describe_move, question_text
from .record import GameRecord, RecordedGame, load_records

#: where ``--web`` saves the games when ``--save`` is not given
DEFAULT_SAVE = Path("results") / "play" / "games.jsonl"
_STOP = object()  # put on a player's queue to end the game when the server stops
_RESIGN = "resign"
_LOOPBACK_NAMES = ("localhost",)
#: the longest move text the API takes (the longest move, "discard 10H", has 11 characters)
MAX_MOVE_CHARS = 40
#: requests that may wait for a newer state at once (long polls, moves and resigns waiting
#: for the bot); one more is answered 429 at once (the page retries a second later)
MAX_WAITING = 8
#: how long a long poll waits for a newer state (seconds)
POLL_SECONDS = 20.0
#: sent with every response: no other site may frame the page (clickjacking)
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}


class WebHumanAgent(DraftingPlayer):
    """A person at the browser, played like any bot.

    ``act`` computes what the player may do (a :class:`~conquian_arena.play.MeldDraft`
    holds a meld until it is finished), publishes the player's view to ``game`` and waits
    on :attr:`inbox` for the page's answer: a move text (``"take"``, ``"meld 7H"`` ...),
    ``"back"``, ``"resign"`` (raises :class:`agents.base.Resign`) or the server's stop.
    """

    name = "you"

    def __init__(self, game: WebGame, auto_pass: bool = False):
        self.game = game
        self.auto_pass = auto_pass
        self.inbox: queue.Queue[Any] = queue.Queue()
        self._plan = []
        self._error = ""  # shown with the next question (e.g. nothing to take back)

    def _only_move(self, view: PlayerView, action: int) -> None:
        self.game.say(f"(only one move: {action_to_str(action)})", view.player)

    def _choose(self, view: PlayerView, draft: MeldDraft, legal: list[int], first: bool) -> int | None:
        error = self._error
        while True:
            self.game.publish_turn(view, draft, legal, error)
            answer = self.inbox.get()
            error = self._error = ""
            if answer is _STOP:
                raise Resign("the server stopped")
            text = str(answer).strip().lower()
            if text == _RESIGN:
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


class WebGame:
    """One game between the person and a bot, played in a thread, and what the page shows of it.

    The game thread publishes snapshots (JSON-ready dicts, each with a new ``version``);
    the web handlers only read them (:meth:`wait`) and put answers on the person's queue.
    """

    def __init__(
        self,
        opponent: str,
        seed: int,
        seat: int = 0,
        first: int = 0,
        forcing: bool = False,
        auto_pass: bool = False,
        save: Path | None = None,
        on_saved: Callable[[GameRecord], None] | None = None,
        number: int = 0,
    ):
        self.opponent, self.seed, self.me, self.first, self.forcing = opponent, seed, seat, first, forcing
        self.number = number  # the how-manieth game of the server, from 0
        self.save_path = save
        self.on_saved = on_saved
        self.bot = make_agent(opponent, seed=seed)  # raises ValueError / ImportError for a bad spec
        bot_name = str(getattr(self.bot, "name", "bot") or "bot")
        self.bot_name = "bot" if bot_name == "you" else bot_name
        self.names = ("you", self.bot_name) if seat == 0 else (self.bot_name, "you")
        self.human = WebHumanAgent(self, auto_pass=auto_pass)
        self.record: GameRecord | None = None
        self.stopped = False
        self._cond = threading.Condition()
        self._version = 0
        self._answered = -1  # the last version the person answered
        self._log: list[dict[str, Any]] = []
        self._snap: dict[str, Any] = {
            "status": "thinking",
            "names": list(self.names),
            "me": seat,
            "bot": self.bot_name,
            "opponent": opponent,
            "seed": None,  # told when the game is over: the seed gives away the whole deal
            "forcing": forcing,
            "game": number,
        }
        self.hands, self.stock = deal_for_seed(seed)
        start = new_game(hands=self.hands, stock=self.stock, first=first, forcing=forcing)
        self._snap.update(_table(PlayerView(start, seat), self.names), legal=[], back="", error="", question="", log=[])
        self._thread = threading.Thread(target=self._run, name="conquian-web-game", daemon=True)

    # ------------------------------------------------------------------ the game thread
    def start(self) -> WebGame:
        self._thread.start()
        return self

    def _run(self) -> None:
        hands, stock = self.hands, self.stock
        players = [self.human, self.bot] if self.me == 0 else [self.bot, self.human]
        self.say(f"{self.names[self.first]} turned {stock[0]} from the stock to start", self.first)

        def on_move(before: GameState, action: int, after: GameState) -> None:
            for line in describe_move(before, action, after, self.names):
                self._log.append({"seat": before.player, "text": line})
            if not after.is_terminal():
                table = _table(PlayerView(after, self.me), self.names)
                self._publish(status="thinking", **table, legal=[], back="", error="")

        try:
            record = play_game(
                players,
                hands=hands,
                stock=stock,
                first=self.first,
                forcing=self.forcing,
                seed=self.seed,
                on_move=on_move,
            )
        except Exception as err:  # the loop itself failing is a bug; show it rather than hang the page
            self._publish(status="over", result=f"the game stopped: {err}", legal=[], back="")
            return
        self.record = record
        self._finish(record)

    def _finish(self, record: GameRecord) -> None:
        final = record.replay()[-1]
        lines: list[str] = []
        if record.failure is not None:
            if record.failure["seat"] == self.me and record.failure["message"] == "the server stopped":
                self.stopped = True
            else:
                _tell_forfeit(record, self.me, lines.append)
        if final.is_terminal():
            if final.winner == self.me:
                lines.append(f"you win in {final.move_count} moves")
            elif final.winner >= 0:
                lines.append(f"{self.bot_name} wins in {final.move_count} moves")
            else:
                lines.append(f"draw: the stock ran out after {final.move_count} moves")
        saved, replay_index = "", None
        if self.save_path is not None and not self.stopped:
            try:
                self.save_path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.save_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record.to_dict()) + "\n")
                games, _ = load_records(self.save_path)
                replay_index = games[-1].index if games else None
                saved = f"saved to {self.save_path}: conquian-replay {self.save_path} --game {replay_index}"
            except OSError as err:
                saved = f"could not save the game to {self.save_path}: {err}"
        if self.on_saved is not None and not self.stopped:
            self.on_saved(record)
        view = PlayerView(final, self.me)
        self._publish(
            status="over",
            **_table(view, self.names),
            result="; ".join(lines) or "game over",
            seed=self.seed,
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
        else _source_text(view.face_up_source, view.face_up_owner, view.passed, names),
        "laying": [face, *cards_of(chosen)] if melding and face >= 0 else [],
        "laying_mine": bool(melding and mine),
        "stock": view.stock_left,
        "dead": cards_of(view.dead),
        "to_move": view.to_move,
        "move": view.move_count,
    }


# --------------------------------------------------------------------------- the server
class PlayServer:
    """The games of one ``conquian-play --web`` run: the current one and the finished ones."""

    def __init__(
        self,
        opponent: str,
        seed: int | None = None,
        seat: int = 0,
        first: str = "you",
        forcing: bool = False,
        auto_pass: bool = False,
        save: str | Path | None = DEFAULT_SAVE,
    ):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"the seed must be a non-negative integer, got {seed!r}")
        self.opponent, self.base_seed, self.seat = opponent, seed, seat
        self.forcing, self.auto_pass = forcing, auto_pass
        self.first = seat if first == "you" else 1 - seat
        self.save = None if save is None else Path(save)
        self.token = secrets.token_urlsafe(16)
        self.played: list[GameRecord] = []
        self.started = 0
        self._lock = threading.Lock()
        self._waiting = threading.BoundedSemaphore(MAX_WAITING)
        self.game = self._new_game()

    def _new_game(self) -> WebGame:
        n = self.started
        self.started += 1
        # hashed, not base + n: the seed told after a game must not give the next game's deal away
        seed = random.randrange(2**31) if self.base_seed is None else derive_seed(self.base_seed, n)
        return WebGame(
            self.opponent,
            seed,
            seat=self.seat,
            first=self.first,
            forcing=self.forcing,
            auto_pass=self.auto_pass,
            save=self.save,
            on_saved=self.played.append,
            number=n,
        ).start()

    def new_game(self) -> WebGame:
        """Deal again (only once the current game is over)."""
        with self._lock:
            if self.game.over:
                old, self.game = self.game, self._new_game()
                old.wake()  # a page waiting on the old game asks again, for the new one
            return self.game

    def stop(self) -> None:
        self.game.stop()

    def wait_slot(self) -> bool:
        """Take one of the :data:`MAX_WAITING` places of a waiting request (give it back with
        :meth:`free_slot`); False when all are taken."""
        return self._waiting.acquire(blocking=False)

    def free_slot(self) -> None:
        self._waiting.release()


def create_app(server: PlayServer, host_names: tuple[str, ...] = ()) -> Any:
    """The Flask application of ``server``.  ``host_names``: the Host headers accepted
    (any when empty); the page's token is required on every API call."""
    from flask import Flask, Response, abort, jsonify, request

    app = Flask(__name__)

    def busy() -> Any:
        answer = jsonify(error=f"more than {MAX_WAITING} requests are waiting; try again in a second")
        answer.headers["Retry-After"] = "1"
        return answer, 429

    def waited(game: WebGame, after: int, timeout: float) -> dict[str, Any]:
        """A newer snapshot than ``after`` when a waiting place is free, else the current one."""
        if not server.wait_slot():
            return game.snapshot()
        try:
            return game.wait(after, timeout)
        finally:
            server.free_slot()

    @app.after_request
    def _headers(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.before_request
    def _guard() -> None:
        if host_names and request.host.rsplit(":", 1)[0].strip("[]") not in host_names:
            abort(403)  # DNS rebinding: a page of another site that resolves to this machine
        if request.path.startswith("/api/") and request.headers.get("X-Conquian-Token") != server.token:
            abort(403)

    @app.get("/")
    def index() -> Response:
        return Response(play_page(server.token), mimetype="text/html")

    @app.get("/replay")
    def replay() -> Response:
        games = [RecordedGame(index=i, line=i + 1, data=r.to_dict()) for i, r in enumerate(server.played)]
        if not games:
            return Response("no finished game yet", status=404, mimetype="text/plain")
        return Response(replay_page(games, title="Conquian: your games"), mimetype="text/html")

    @app.get("/api/state")
    def state() -> Response:
        after = request.args.get("after", default=-1, type=int)
        number = request.args.get("game", default=-1, type=int)
        game = server.game
        waits = after >= 0 and number == game.number  # a page still on an earlier game gets this one now
        if not waits:
            snap = game.snapshot()
        elif not server.wait_slot():
            return busy()
        else:
            try:
                snap = game.wait(after, timeout=POLL_SECONDS)
            finally:
                server.free_slot()
        snap["played"] = len(server.played)
        return jsonify(snap)

    @app.post("/api/move")
    def move() -> Any:
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return jsonify(error='the body must be a JSON object: {"move": TEXT, "version": N}'), 400
        move, version = body.get("move"), body.get("version")
        if not isinstance(move, str) or len(move) > MAX_MOVE_CHARS:
            shown = "a text" if isinstance(move, str) else type(move).__name__
            return jsonify(error=f"'move' must be a move text of at most {MAX_MOVE_CHARS} characters, got {shown}"), 400
        game = server.game
        if not game.submit(move, version):
            return jsonify(dict(game.snapshot(), error="that is not a move now: the table has changed")), 409
        out = waited(game, version, timeout=10.0)
        out["played"] = len(server.played)
        return jsonify(out)

    @app.post("/api/resign")
    def resign() -> Any:
        game = server.game
        snap = game.snapshot()
        if snap["status"] == "over":
            return jsonify(snap), 409
        game.answer(_RESIGN)
        return jsonify(waited(game, snap["version"], timeout=10.0))

    @app.post("/api/new")
    def new() -> Any:
        game = server.new_game()
        snap = game.snapshot()
        snap["played"] = len(server.played)
        return jsonify(snap)

    return app


def make_http_server(server: PlayServer, host: str = "127.0.0.1", port: int = 8000) -> Any:
    """A Werkzeug server for ``server`` (``port`` 0 picks a free port: ``.server_port``)."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:  # no line per request (the page polls)
            pass

    names: tuple[str, ...] = ()
    if _is_loopback(host):
        names = ("127.0.0.1", "localhost", "::1", host)
    return make_server(host, port, create_app(server, names), threaded=True, request_handler=QuietHandler)


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(args: argparse.Namespace, output: Callable[[str], Any] = print) -> int:
    """``conquian-play --web``: serve until Ctrl-C.  ``args`` are :mod:`conquian_arena.play`'s."""
    try:
        import flask  # noqa: F401
    except ImportError:
        output("the browser front end needs Flask: pip install 'conquian-env[web]'")
        return 2
    try:
        server = PlayServer(
            args.opponent,
            seed=args.seed,
            seat=args.seat,
            first=args.first,
            forcing=args.forcing,
            auto_pass=args.auto_pass,
            save=args.save or DEFAULT_SAVE,
        )
    except (ValueError, ImportError) as err:
        output(f"cannot build the bot {args.opponent!r}: {err}")
        return 2
    try:
        http = make_http_server(server, args.host, args.port)
    except OSError as err:
        server.stop()
        output(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}")
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{http.server_port}/"
    output(f"Conquian: you (seat {args.seat}) against {args.opponent}, in the browser at {url}")
    output(f"finished games are saved to {server.save}; Ctrl-C stops the server")
    if not _is_loopback(args.host):
        output(f"warning: listening on {args.host}: other machines can reach this page")
    if args.open:
        import webbrowser

        webbrowser.open(url)
    try:
        http.serve_forever()  # returns on Ctrl-C (Werkzeug's server takes the KeyboardInterrupt)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        http.server_close()
    output("\nstopped: an unfinished game is not saved")
    return 0


# --------------------------------------------------------------------------- the page
_PLAY_CSS = """
main { display: grid; grid-template-columns: minmax(640px, 1fr) 380px; gap: 12px; padding: 12px; align-items: start; }
aside { display: flex; flex-direction: column; gap: 10px; min-width: 0; }
#status { background: #f6f3e4; color: #111; border-radius: 8px; padding: 8px 10px; min-height: 70px; }
#status[data-status="your-move"] { box-shadow: 0 0 0 3px var(--gold); }
#status .error { color: #b0201a; font-weight: 600; }
#status .result { font-weight: 700; font-size: 17px; }
.buttons { display: flex; flex-wrap: wrap; gap: 6px; }
.buttons button[data-move="take"], .buttons button[data-move="finish"] { font-weight: 700; }
#log { margin: 0; padding: 6px 8px 6px 26px; max-height: 380px; overflow: auto; background: #0b1f13;
  border-radius: 8px; font-size: 13px; }
#log li.bot { color: #ffd98a; } #log li.note { opacity: 0.7; font-style: italic; }
svg.card[data-move] { cursor: pointer; transition: transform 0.08s; }
svg.card[data-move]:hover { transform: translateY(-8px); }
svg.card.playable .face { stroke: var(--gold); stroke-width: 3; }
.hand-hint { font-size: 12px; opacity: 0.85; min-height: 18px; }
.laying-zone { min-width: 60px; }
a { color: #ffd98a; }
@media (max-width: 1000px) { main { grid-template-columns: 1fr; } }
"""

_PLAY_JS = r"""
const TOKEN = JSON.parse(document.getElementById("token").textContent);
const HEAD = {"X-Conquian-Token": TOKEN, "Content-Type": "application/json"};
let snap = null, busy = false;
async function api(path, body) {
  const r = await fetch(path, body === undefined ? {headers: HEAD} : {method: "POST", headers: HEAD,
    body: JSON.stringify(body)});
  if (!r.ok && r.status !== 409) throw new Error(`${path}: ${r.status}`);  // 409: a snapshot, with its error
  return r.json();
}
function groupsHtml(groups) { return meldHtml(groups, ""); }
function render(s) {
  if (snap && (s.game < snap.game || (s.game === snap.game && s.version < snap.version))) return;
  snap = s;
  const me = s.me, opp = 1 - me, legal = new Set(s.legal || []), mine = s.status === "your-move" && !busy;
  const over = s.status === "over";
  document.getElementById("title").textContent =
    `you against ${s.opponent}${s.forcing ? " (forcing variant)" : ""}` +
    (s.seed == null ? "" : `, deal seed ${s.seed}`);
  // the opponent
  const oppHand = over && s.reveal ? s.reveal.hands[opp].map(c => cardSvg(c)).join("")
    : Array.from({length: s.opp_hand || 0}, () => backSvg()).join("");
  document.getElementById("opp-name").textContent =
    `${s.bot}${s.to_move === opp && !over ? " (to move)" : ""}: ${s.opp_hand} cards in hand`;
  document.getElementById("opp-hand").innerHTML = oppHand || EMPTY;
  document.getElementById("opp-hand").dataset.count = s.opp_hand;
  document.getElementById("opp-meld").innerHTML = groupsHtml(s.opp_meld || []);
  // the middle
  document.getElementById("stock").innerHTML = s.stock ? backSvg() : EMPTY;
  document.getElementById("stock-count").textContent = `stock: ${s.stock}`;
  const face = document.getElementById("face");
  const laying = s.laying || [];
  face.dataset.card = s.face >= 0 ? cardName(s.face) : "";
  face.innerHTML = laying.length ? laying.map((c, k) => cardSvg(c, "laying")).join("")
    : s.face >= 0 ? cardSvg(s.face) : '<span class="empty">none</span>';
  face.className = laying.length ? "group" : "";
  document.getElementById("face-text").textContent = laying.length
    ? (s.laying_mine ? "your meld, not played yet" : "being melded by the bot") : s.face_text || "";
  const dead = s.dead || [];
  document.getElementById("dead").innerHTML = dead.map(c => cardSvg(c, "small")).join("") || EMPTY;
  document.getElementById("dead").dataset.cards = namesOf(dead);
  document.getElementById("dead-count").textContent = `dead pile (${dead.length})`;
  // you
  document.getElementById("my-meld").innerHTML = groupsHtml(s.meld || []);
  const hand = document.getElementById("hand");
  hand.dataset.cards = namesOf(s.hand || []);
  let hint = "";
  hand.innerHTML = (s.hand || []).map(c => {
    const name = cardName(c);
    let move = "";
    if (mine && legal.has("meld " + name)) { move = "meld " + name; hint = "click a card to lay it with the others"; }
    else if (mine && legal.has("discard " + name)) { move = "discard " + name; hint = "click a card to discard it"; }
    return move ? cardSvg(c, "playable", `data-move="${move}" role="button" aria-label="${move}"`) : cardSvg(c);
  }).join("") || EMPTY;
  document.getElementById("hand-hint").textContent = hint;
  document.getElementById("my-name").textContent = `you${s.to_move === me && !over ? " (to move)" : ""}`;
  // buttons: only the legal moves are enabled
  for (const b of document.querySelectorAll(".buttons button[data-move]")) {
    const ok = mine && (b.dataset.move === "back" ? !!s.back : legal.has(b.dataset.move));
    b.disabled = !ok;
    b.hidden = (b.dataset.move === "force" || b.dataset.move === "no force") && !legal.has(b.dataset.move);
    if (b.dataset.move === "back") b.title = s.back || "nothing to take back";
  }
  document.getElementById("resign").disabled = over;
  document.getElementById("new").hidden = !over;
  // what happens
  const status = document.getElementById("status");
  status.dataset.status = s.status;
  status.dataset.version = s.version;
  let text = "";
  if (over) {
    text = `<div class="result" id="result">${esc(s.result || "game over")}</div>`;
    if (s.saved) text += `<div>${esc(s.saved)}</div>`;
    if (s.played) text += `<div><a href="replay#game=${s.played - 1}" target="_blank">watch the replay</a></div>`;
  } else if (s.status === "your-move") {
    text = `<div><b>your move</b> (move ${s.move + 1})</div><div>${esc(s.question || "")}</div>`;
  } else {
    text = `<div>${esc(s.bot)} is thinking...</div>`;
  }
  if (s.error) text += `<div class="error">${esc(s.error)}</div>`;
  status.innerHTML = text;
  const log = document.getElementById("log");
  const lines = s.log || [];
  log.innerHTML = lines.map(l => {
    const cls = (l.seat === me ? "you" : "bot") + (l.text.startsWith("(") ? " note" : "");
    return `<li class="${cls}">${esc(l.text)}</li>`;
  }).join("");
  log.scrollTop = log.scrollHeight;
}
async function send(move) {
  if (busy || !snap || snap.status !== "your-move") return;
  busy = true;
  render(snap);  // everything disabled while the move travels
  try { const s = await api("api/move", {move, version: snap.version}); busy = false; render(s); }
  catch (e) { busy = false; render(snap); }
}
document.addEventListener("click", e => {
  const el = e.target.closest("[data-move]");
  if (el && !el.disabled) send(el.dataset.move);
});
document.getElementById("resign").onclick = async () => {
  if (confirm("Resign this game?")) render(await api("api/resign", {}));
};
document.getElementById("new").onclick = async () => { snap = null; render(await api("api/new", {})); };
async function poll() {
  for (;;) {
    try { render(await api(`api/state?game=${snap ? snap.game : -1}&after=${snap ? snap.version : 0}`)); }
    catch (e) { await new Promise(r => setTimeout(r, 1000)); }
  }
}
api("api/state").then(render).then(poll);
"""


def play_page(token: str) -> str:
    """The play page (self-contained: inline styles, script and SVG cards)."""
    buttons = "".join(
        f'<button data-move="{m}" disabled>{label}</button>'
        for m, label in (
            ("take", "take"),
            ("refuse", "refuse"),
            ("finish", "finish meld"),
            ("back", "&#x21B6; back"),
            ("force", "force"),
            ("no force", "no force"),
        )
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            "<title>Conquian: play</title>",
            '<link rel="icon" href="data:,">',
            f"<style>{CARD_CSS}{_PLAY_CSS}</style></head><body>",
            SUIT_SYMBOLS,
            '<header><h1>Conquian</h1><span id="title"></span>',
            '<button id="resign" title="give the game up">resign</button>',
            '<button id="new" hidden>new game</button></header>',
            '<main><section class="felt">',
            '<div class="seat"><div class="who" id="opp-name"></div><div class="row">',
            '<div class="hand small" id="opp-hand"></div><div class="meld" id="opp-meld"></div></div></div>',
            '<div class="middle">',
            '<div class="spot"><div id="stock"></div><div class="label" id="stock-count"></div></div>',
            '<div class="spot laying-zone"><div id="face"></div><div class="label">face-up card</div></div>',
            '<div class="caption" id="face-text"></div>',
            '<div class="spot"><div id="dead" class="pile small"></div><div class="label" id="dead-count"></div></div>',
            "</div>",
            '<div class="seat"><div class="who" id="my-name">you</div>',
            '<div class="label">your meld</div><div class="meld" id="my-meld"></div>',
            '<div class="label">your hand</div><div class="hand" id="hand"></div>',
            '<div class="hand-hint" id="hand-hint"></div></div>',
            "</section><aside>",
            '<div id="status" aria-live="polite"></div>',
            f'<div class="buttons">{buttons}</div>',
            '<ol id="log"></ol>',
            "</aside></main>",
            f'<script type="application/json" id="token">{json_for_script(token)}</script>',
            f"<script>{CARD_JS}{_PLAY_JS}</script>",
            "</body></html>",
        ]
    )


__all__ = ["DEFAULT_SAVE", "PlayServer", "WebGame", "WebHumanAgent", "create_app", "main", "make_http_server"]
