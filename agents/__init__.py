"""Bots for Conquian behind one interface (:class:`agents.base.Agent`), built from spec strings.

>>> from agents import make_agent
>>> bot = make_agent("greedy")

See :mod:`agents.registry` for the spec grammar and :mod:`agents.match` to play games.
"""

from .base import Agent, PlayerView, RandomAgent
from .match import GameRecord, play_game
from .registry import KNOWN_BOTS, SpecError, describe_bots, make_agent, parse_spec

__all__ = [
    "KNOWN_BOTS",
    "Agent",
    "GameRecord",
    "PlayerView",
    "RandomAgent",
    "SpecError",
    "describe_bots",
    "make_agent",
    "parse_spec",
    "play_game",
]
