"""Conquian in JAX: the rules as pure functions and a :class:`pgx.Env` (optional extra ``jax``).

``pip install conquian-env[jax]`` brings JAX and Pgx; ``import conquian_env`` never imports
this package.  :class:`Conquian` is the environment (:mod:`conquian_env.jax.env`),
:mod:`conquian_env.jax.game` the rules on one game's state, :mod:`conquian_env.jax.melds`
the meld questions as bit arithmetic (the greedy bot in JAX, a bot and so not the
environment's, is :mod:`agents.greedy.greedy_jax`).  Exactly the scalar engine: ``tests/test_jax.py``
plays thousands of games through both and compares every mask, observation, player and
result.
"""

from __future__ import annotations

from ..extras import missing

try:
    import jax  # noqa: F401
    import pgx  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the installation
    raise missing(err, "conquian_env.jax") from None

from .env import Conquian
from .game import State, to_game_state

__all__ = ["Conquian", "State", "to_game_state"]
