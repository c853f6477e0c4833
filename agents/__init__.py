"""Bots for Conquian behind one interface (:class:`agents.base.Agent`), built from spec strings.

>>> from agents import make_agent
>>> bot = make_agent("greedy")

See :mod:`agents.registry` for the spec grammar.  The bots build only on the environment
package (``conquian_env``); to play games between them (or against a person), use
:func:`conquian_arena.play_game`.
"""

from .base import Agent, PlayerView, RandomAgent, Resign
from .registry import KNOWN_BOTS, SpecError, describe_bots, make_agent, parse_spec

__all__ = [
    "KNOWN_BOTS",
    "Agent",
    "PlayerView",
    "RandomAgent",
    "Resign",
    "SpecError",
    "describe_bots",
    "make_agent",
    "parse_spec",
]
