"""Play one game between two bots on the engine, with a full replayable record.

:func:`play_game` drives :class:`~conquian_env.game.GameState` directly (no wrappers),
giving each bot the same observation, mask and :class:`~agents.base.PlayerView` the
environment would.  A bot that raises or returns an illegal action loses the game; the
record says who failed and why, so a tournament can go on and count it.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from conquian_env.actions import action_to_str
from conquian_env.cards import CARD_NAMES, cards_of
from conquian_env.game import GameState, new_game, shuffled_deal
from conquian_env.observation import action_mask, encode
from conquian_env.replay import REQUIRED_FIELDS, RecordedGame, replay_states

from .base import Agent, PlayerView


@dataclass
class GameRecord:
    """One finished game: enough to replay it move by move."""

    hands: list[list[str]]  # the deal: ten cards per seat
    stock: list[str]  # twenty cards, top first
    first: int  # seat that played first
    forcing: bool
    players: list[str]  # bot name per seat
    actions: list[str] = field(default_factory=list)  # every decision as text, in order
    winner: int | None = None  # seat that won, None for a draw or an unfinished game
    moves: int = 0
    failure: dict[str, Any] | None = None  # {"seat", "kind": "crash"|"illegal", "message"}
    think_time: list[float] = field(default_factory=lambda: [0.0, 0.0])  # seconds per seat
    decisions: list[int] = field(default_factory=lambda: [0, 0])
    max_think: list[float] = field(default_factory=lambda: [0.0, 0.0])  # longest decision, seconds

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRecord:
        """Build from a dict such as a games.jsonl line; extra keys (index, pair, ...) are ignored."""
        names = {f.name for f in fields(cls)}
        missing = [n for n in REQUIRED_FIELDS if n not in data and n != "actions"]
        if missing:
            raise ValueError(f"game record lacks field(s) {missing}")
        return cls(**{k: v for k, v in data.items() if k in names})

    def replay(self) -> list[GameState]:
        """States after the deal and after every action (validates the whole record).

        Raises ``ValueError`` (:class:`conquian_env.replay.ReplayError`) naming the move
        number and action of the first impossible step.
        """
        states, _ = replay_states(RecordedGame(index=0, line=0, data=self.to_dict()))
        return states


def deal_for_seed(seed: int) -> tuple[list[list[str]], list[str]]:
    """The shuffled deal (as card text) that ``new_game(seed=seed)`` would make."""
    hands, stock = shuffled_deal(seed)
    return [[CARD_NAMES[c] for c in cards_of(h)] for h in hands], [CARD_NAMES[c] for c in stock]


def play_game(
    agents: list[Agent] | tuple[Agent, Agent],
    *,
    hands: list[list[str]],
    stock: list[str],
    first: int = 0,
    forcing: bool = False,
    seed: int | None = None,
) -> GameRecord:
    """Play one game: ``agents[i]`` sits in seat ``i``.  ``seed`` seeds the bots for this game."""
    state = new_game(hands=hands, stock=stock, first=first, forcing=forcing)
    record = GameRecord(
        hands=[list(h) for h in hands],
        stock=list(stock),
        first=first,
        forcing=forcing,
        players=[a.name for a in agents],
    )
    views = [PlayerView(state, 0), PlayerView(state, 1)]
    for seat, agent in enumerate(agents):
        try:
            agent.reset(seat, None if seed is None else seed * 2 + seat)
        except Exception as err:  # a bot that cannot even start loses
            record.failure = _failure(seat, "crash", err)
            record.winner = 1 - seat
            return record
    while not state.is_terminal():
        seat = state.player
        start = time.perf_counter()
        try:
            action = agents[seat].act(encode(state, seat), action_mask(state, seat), views[seat])
        except Exception as err:
            record.failure = _failure(seat, "crash", err)
            record.winner = 1 - seat
            break
        finally:
            spent = time.perf_counter() - start
            record.think_time[seat] += spent
            record.decisions[seat] += 1
            if spent > record.max_think[seat]:
                record.max_think[seat] = spent
        if not _is_action_id(action) or not state.is_legal(int(action)):
            record.failure = {
                "seat": seat,
                "kind": "illegal",
                "message": state._illegal_message(action),
            }
            record.winner = 1 - seat
            break
        action = int(action)
        record.actions.append(action_to_str(action))
        state.apply(action)
    else:
        record.winner = state.winner if state.winner >= 0 else None
    record.moves = len(record.actions)
    return record


def _is_action_id(action: Any) -> bool:
    """Only true integers are actions: 80.7 or True is an illegal answer, not 80 or 1."""
    return isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))


def _failure(seat: int, kind: str, err: BaseException) -> dict[str, Any]:
    tb = traceback.format_exception_only(type(err), err)
    return {"seat": seat, "kind": kind, "message": "".join(tb).strip()}
