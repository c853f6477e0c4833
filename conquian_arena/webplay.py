"""Play Conquian against a bot in the browser: ``conquian-play --web``.

Usage::

    conquian-play --web --opponent greedy [--port 8000] [--host 127.0.0.1] [--seed N] [--RULE ...]
                  [--first you|bot] [--seat 0|1] [--auto-pass] [--save FILE] [--open]

serves a page at ``http://127.0.0.1:8000/`` (only this machine can reach it unless
``--host`` says otherwise) where a person plays any bot spec (``random``, ``greedy``,
``pimc:iterations=200``, ``ppo:model.zip`` ...) with the mouse: click a hand card to lay
it with the taken card or to discard it, and the buttons take, refuse, finish, back,
force, no force; only the legal moves can be clicked.  A meld is collected before it is
played (:class:`~conquian_arena.human.MeldDraft`): *back* takes the last card, or the
take, back.  The bot's moves are narrated (:func:`~conquian_arena.narration.describe_move`).
Each finished game is appended to ``--save`` (default ``results/play/games.jsonl``) in
the tournament record format, so ``conquian-replay FILE`` shows it, and the page links
to its replay (:mod:`conquian_arena.pages`).  *New game* deals again.

The person is a player like any bot, and the game is played by the one game loop in a thread:
:class:`~conquian_arena.webgame.WebHumanAgent` and :class:`~conquian_arena.webgame.WebGame`
(:mod:`conquian_arena.webgame`).  This module is the server: :class:`PlayServer` (the current
game), :func:`create_app` (the API), :func:`serve`.  The page is made of the package's page assets
(:func:`conquian_arena.pages.page`).

Flask (the ``web`` extra, ``pip install 'conquian-env[web]'``) serves it: the game loop
blocks a thread per decision, and Flask's plain synchronous handlers hand moves across
with a queue and a condition variable, no event loop to bridge; its server (Werkzeug,
threaded) is enough for one person on localhost.  The API (JSON; every call carries the
page's token in ``X-Conquian-Token``, and requests naming another host are refused, so
other web sites cannot drive it): ``GET /api/state?game=N&after=V`` (waits up to 20 s
for a state of game ``N`` newer than version ``V``), ``POST /api/move`` ``{"move": "meld 7H", "version": V}``
(``"back"`` takes back; any other body, a body over :data:`MAX_BODY_BYTES` bytes or nested
deeper than :data:`MAX_BODY_DEPTH`, or a move over :data:`~conquian_arena.webgame.MAX_MOVE_CHARS` characters, is
answered 400 saying why), ``POST /api/resign``, ``POST /api/new``; ``GET /replay`` replays
the games played since the server started.  ``GET /api/state?game=N&after=V`` answers at
once when game ``N`` is no longer the current one.  At most :data:`MAX_WAITING` requests
wait at once (a long poll beyond them is answered 429, a move or resign beyond them gets
the current state), so polls cannot pile up threads; every response forbids framing
(:data:`SECURITY_HEADERS`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conquian_env.extras import missing
from conquian_env.seeding import game_number_seed

from .human_game import Setup
from .pages import json_for_script, page, replay_page
from .record import GameRecord, RecordedGame
from .webgame import MAX_MOVE_CHARS, RESIGN, WebGame, WebHumanAgent

#: where ``--web`` saves the games when ``--save`` is not given
DEFAULT_SAVE = Path("results") / "play" / "games.jsonl"
_LOOPBACK_NAMES = ("localhost",)
#: the largest request body the API reads (a move's body, ``{"move": ..., "version": N}``, is under 100 bytes)
MAX_BODY_BYTES = 1024
#: the deepest nesting of arrays and objects a body may have (a move's body has 1)
MAX_BODY_DEPTH = 4
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


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings do not count),
    counted without parsing, so that a body nested thousands deep is refused before the parser recurses."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse_body(raw: bytes) -> tuple[Any, str | None]:
    """A request body as JSON: ``(value, None)``, or ``(None, why not)`` for a body over
    :data:`MAX_BODY_BYTES` bytes, nested deeper than :data:`MAX_BODY_DEPTH`, not UTF-8 or not JSON."""
    if len(raw) > MAX_BODY_BYTES:
        return None, f"the body is over {MAX_BODY_BYTES} bytes"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "the body is not UTF-8 text"
    depth = json_depth(text)
    if depth > MAX_BODY_DEPTH:
        return None, f"the body nests arrays or objects {depth} deep (at most {MAX_BODY_DEPTH})"
    try:
        return json.loads(text), None
    except ValueError:
        return None, "the body is not JSON"


# --------------------------------------------------------------------------- the server
class PlayServer:
    """The games of one ``conquian-play --web`` run: the current one and the finished ones."""

    def __init__(self, setup: Setup, save: str | Path | None = DEFAULT_SAVE):
        self.setup = setup  # its seed (if any) is the base of every game's own
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
        seed = None if self.setup.seed is None else game_number_seed(self.setup.seed, n)  # None: a random one
        return WebGame(
            dataclasses.replace(self.setup, seed=seed), save=self.save, on_saved=self.played.append, number=n
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
        expected = '{"move": TEXT, "version": N}'
        length = request.content_length
        if length is not None and length > MAX_BODY_BYTES:  # refused unread
            body, why = None, f"the body is over {MAX_BODY_BYTES} bytes"
        else:
            body, why = parse_body(request.stream.read(MAX_BODY_BYTES + 1))
        if why is not None:
            return jsonify(error=f"the body must be a JSON object {expected} ({why})"), 400
        if not isinstance(body, dict):
            return jsonify(error=f"the body must be a JSON object: {expected}"), 400
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
        game.answer(RESIGN)
        out = waited(game, snap["version"], timeout=10.0)
        out["played"] = len(server.played)  # the page links the resigned game's replay too
        return jsonify(out)

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


def serve(
    setup: Setup,
    *,
    save: str | Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    open_browser: bool = False,
    output: Callable[[str], Any] = print,
) -> int:
    """``conquian-play --web``: serve the play page until Ctrl-C; returns the exit status (2: a
    bad option, a bot that cannot be built, no Flask, a port that cannot be listened on).
    ``setup`` is the game ``conquian-play`` asks for (its seed, if any, the base of every game's);
    the other options are its own (``save`` defaults to :data:`DEFAULT_SAVE`)."""
    try:
        import flask  # noqa: F401
    except ImportError as err:
        output(str(missing(err, "conquian-play --web (the browser front end)")))
        return 2
    try:
        server = PlayServer(setup, save=save or DEFAULT_SAVE)
    except ValueError as err:  # a bot that cannot be built
        output(str(err))
        return 2
    if server.save is not None and os.path.lexists(server.save) and not server.save.is_file():
        server.stop()
        output(f"--save {server.save} is not a file of games (a folder, or a link to nothing): give a file")
        return 2
    try:
        http = make_http_server(server, host, port)
    except OSError as err:
        server.stop()
        output(f"cannot listen on {host}:{port}: {err.strerror or err}")
        return 2
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{http.server_port}/"
    output(f"Conquian: you (seat {setup.seat}) against {setup.opponent}, in the browser at {url}")
    output(f"finished games are saved to {server.save}; Ctrl-C stops the server")
    if not _is_loopback(host):
        output(f"warning: listening on {host}: other machines can reach this page")
    if open_browser:
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
def play_page(token: str) -> str:
    """The play page (self-contained: the assets ``play.html``, ``play.css``, ``play.js`` and
    the cards, inline), with the page's ``token``."""
    return page("play.html", token=json_for_script(token))


__all__ = [
    "DEFAULT_SAVE",
    "PlayServer",
    "WebGame",
    "WebHumanAgent",
    "create_app",
    "make_http_server",
    "play_page",
    "serve",
]
