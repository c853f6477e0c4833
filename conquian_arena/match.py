"""The one game loop: two players (bots or a person) play one game, with a full replayable record.

:func:`play_game` drives :class:`~conquian_env.game.GameState` directly (no wrappers),
giving each player the same observation, mask and :class:`~conquian_env.view.PlayerView`
the environment would.  A player that raises or returns anything but a legal action id
loses the game (judged by :meth:`GameState.check_action <conquian_env.game.GameState.check_action>`),
one that raises :class:`agents.base.Resign` gives it up; the record says who failed and
why, so a tournament can go on and count it.  After the game every player hears how it ended
(:meth:`Agent.end_game <agents.base.Agent.end_game>`).  Tournaments, training evaluations, the
human front end and the tests all play through this loop.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from agents.base import Agent, BotFailure, PlayerView, Resign
from conquian_env.actions import action_to_str
from conquian_env.cards import CARD_NAMES, cards_of
from conquian_env.game import GameState, new_game, shuffled_deal
from conquian_env.observation import action_mask, encode
from conquian_env.rules import Rules, resolve
from conquian_env.seeding import seat_seed

from .record import GameRecord

#: ``on_move(before, action, after)``, called after every move: ``before`` is a copy of the
#: state before it, ``after`` the live state (read it; do not keep or change it)
MoveObserver = Callable[[GameState, int, GameState], Any]


def deal_for_seed(seed: int) -> tuple[list[list[str]], list[str]]:
    """The shuffled deal (as card text) that ``new_game(seed=seed)`` would make."""
    hands, stock = shuffled_deal(seed)
    return [[CARD_NAMES[c] for c in cards_of(h)] for h in hands], [CARD_NAMES[c] for c in stock]


def play_game(
    agents: Sequence[Agent],
    *,
    hands: list[list[str]],
    stock: list[str],
    first: int = 0,
    rules: Rules | None = None,
    seed: int | None = None,
    on_move: MoveObserver | None = None,
) -> GameRecord:
    """Play one game: ``agents[i]`` sits in seat ``i``.  ``seed`` seeds the players for this game
    (seat ``i`` gets :func:`conquian_env.seeding.seat_seed`, ``seed * 2 + i``).
    ``on_move(before, action, after)``, when given, is called after every move (a front end
    shows the moves with it)."""
    rules = resolve(rules)  # None: the standard game
    state = new_game(hands=hands, stock=stock, first=first, rules=rules)
    record = GameRecord(
        hands=[list(h) for h in hands],
        stock=list(stock),
        first=first,
        rules=rules,
        players=[a.name for a in agents],
    )
    views = [PlayerView(state, 0), PlayerView(state, 1)]
    for seat, agent in enumerate(agents):
        try:
            agent.reset(seat, None if seed is None else seat_seed(seed, seat))
        except Exception as err:  # a bot that cannot even start loses
            record.failure = _failure(seat, err)
            record.winner = 1 - seat
            _tell_the_end(agents, record)
            return record
    while not state.is_terminal():
        seat = state.player
        start = time.perf_counter()
        try:
            answer = agents[seat].act(encode(state, seat), action_mask(state, seat), views[seat])
        except Exception as err:
            record.failure = _failure(seat, err)
            record.winner = 1 - seat
            break
        finally:
            spent = time.perf_counter() - start
            record.think_time[seat] += spent
            record.decisions[seat] += 1
            if spent > record.max_think[seat]:
                record.max_think[seat] = spent
        try:
            action = state.check_action(answer)
        except ValueError as err:  # not an action id (80.7, True), or not a legal one here
            record.failure = {"seat": seat, "kind": "illegal", "message": str(err)}
            record.winner = 1 - seat
            break
        record.actions.append(action_to_str(action))
        if on_move is None:
            state.apply(action)
        else:
            before = state.clone()
            state.apply(action)
            on_move(before, action, state)
    else:
        record.winner = state.winner if state.winner >= 0 else None
    record.moves = len(record.actions)
    _tell_the_end(agents, record)
    return record


def _tell_the_end(agents: Sequence[Agent], record: GameRecord) -> None:
    for seat, agent in enumerate(agents):
        try:
            agent.end_game(seat, record.winner, record.failure)
        except Exception:  # noqa: S110 - the game is over and recorded: a bot's last word cannot change it
            pass


def _failure(seat: int, err: BaseException) -> dict[str, Any]:
    if isinstance(err, Resign):
        return {"seat": seat, "kind": "quit", "message": str(err) or "resigned"}
    if isinstance(err, BotFailure):
        return {"seat": seat, "kind": err.kind, "message": str(err)}
    tb = traceback.format_exception_only(type(err), err)
    return {"seat": seat, "kind": "crash", "message": "".join(tb).strip()}
