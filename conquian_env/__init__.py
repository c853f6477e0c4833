"""conquian-env: Conquian, the two-player ancestor of rummy, as a PettingZoo AEC environment.

>>> import conquian_env
>>> env = conquian_env.env()
>>> env.reset(seed=0)
>>> par = conquian_env.parallel_env()     # the same game as a PettingZoo ParallelEnv

The single-agent (Gymnasium) view, one seat against a bot, for SB3 / MaskablePPO::

    import gymnasium, conquian_env
    env = gymnasium.make("conquian_env/Conquian-v0", opponent="greedy")

Modules: :mod:`~conquian_env.cards` (card ids and text), :mod:`~conquian_env.melds`
(meld logic), :mod:`~conquian_env.conquian_v0` (the environment as a versioned module, as
PettingZoo's classic ones are), :mod:`~conquian_env.game` (the rules engine), :mod:`~conquian_env.actions`
(action ids and text), :mod:`~conquian_env.observation` (observation layout and decoder),
:mod:`~conquian_env.env` (the AEC adapter), :mod:`~conquian_env.render` (text),
:mod:`~conquian_env.plugins` (bot spec strings, resolved by whichever installed package
provides bots: this package imports none), :mod:`~conquian_env.wrappers` (the
single-agent view), :mod:`~conquian_env.transitions` (per-seat transitions).  Imported
only when used: :mod:`~conquian_env.vector` (the batched engine, numba),
:mod:`~conquian_env.vector_env` (Gymnasium vector env over it), :mod:`~conquian_env.sb3`
(its SB3 ``VecEnv`` and self-play), :mod:`~conquian_env.image` (rgb_array, Pillow),
:mod:`~conquian_env.integrations.rllib` (RLlib), :mod:`~conquian_env.integrations.tianshou`
(Tianshou), :mod:`~conquian_env.integrations.agilerl` (AgileRL), :mod:`~conquian_env.jax` (the rules in JAX,
a Pgx environment: extra ``jax``).  Bots are in the ``agents`` package, games
between them and people in ``conquian_arena``; both build on this one.
"""

from __future__ import annotations

from typing import Any

from . import actions, cards, conquian_v0, game, melds, observation
from .env import env, parallel_env, raw_env
from .game import GameState, IllegalActionError, new_game

__version__ = "0.1.0"

__all__ = [
    "GameState",
    "IllegalActionError",
    "actions",
    "cards",
    "conquian_v0",
    "env",
    "game",
    "melds",
    "new_game",
    "observation",
    "parallel_env",
    "raw_env",
]


#: Gymnasium id of the single-agent view (one seat against a bot); ``opponent=`` picks the bot.
#: ``gymnasium.make_vec`` on it gives the batched :class:`~conquian_env.vector_env.ConquianVectorEnv`
#: (its vector entry point, gymnasium's default), or with ``vectorization_mode="sync"`` a
#: ``SyncVectorEnv`` over the single-agent view (seeded by ``reset(seed=S)``: sub-env i gets ``S + i``;
#: ``seed=`` is an argument of the batched env only, refused with a clear error otherwise).
GYM_ENV_ID = "conquian_env/Conquian-v0"


def _make_vector_env(num_envs: int = 1, **kwargs: Any) -> Any:
    """The vector entry point of :data:`GYM_ENV_ID`: ``ConquianVectorEnv(num_envs, **kwargs)``."""
    try:
        from .vector_env import ConquianVectorEnv
    except ImportError as err:  # the batched engine is the 'fast' extra
        from .extras import missing

        raise missing(
            err,
            f"gymnasium.make_vec({GYM_ENV_ID!r}) (the batched ConquianVectorEnv)",
            instead="or pass vectorization_mode='sync' for gymnasium's SyncVectorEnv over the single-agent env",
        ) from None
    return ConquianVectorEnv(num_envs, **kwargs)


def _make_single_env(**kwargs: Any) -> Any:
    """The entry point of :data:`GYM_ENV_ID`: ``SingleAgentEnv(**kwargs)``; a ``seed`` is refused, saying how to seed.

    Gymnasium seeds an env through ``reset(seed=...)``, and ``make_vec(..., vectorization_mode="sync")``
    (or ``"async"``) builds every sub-env with the same arguments, so a constructor seed would deal the
    same games in all of them."""
    if "seed" in kwargs:
        raise TypeError(
            f"the single-agent env {GYM_ENV_ID!r} takes no seed= argument: Gymnasium seeds it through reset. "
            "gymnasium.make(...): env.reset(seed=S); gymnasium.make_vec(..., vectorization_mode='sync' or 'async'): "
            "envs.reset(seed=S) seeds sub-env i with S + i (Gymnasium's convention; a seed= given to every sub-env "
            "would deal the same games in all of them); the batched default, gymnasium.make_vec(id, n, seed=S) "
            "without vectorization_mode, takes seed= itself"
        )
    from .wrappers import SingleAgentEnv

    return SingleAgentEnv(**kwargs)


def _register() -> None:
    import warnings

    import gymnasium
    import pettingzoo

    if GYM_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            GYM_ENV_ID,
            entry_point="conquian_env:_make_single_env",
            vector_entry_point="conquian_env:_make_vector_env",
        )

    # PettingZoo's registry (pettingzoo.make) exists from 1.27 on; older releases, which
    # pyproject admits for libraries that pin them, simply have no registration.
    # The AEC game and its parallel form (parallel_env) under the one id, as PettingZoo's own envs.
    for kind, entry_point in (("aec", "conquian_env.env:env"), ("parallel", "conquian_env.env:parallel_env")):
        registry = getattr(pettingzoo, f"{kind}_registry", None)
        if registry is not None and "Conquian-v0" not in registry:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pettingzoo.register(kind, "Conquian-v0", entry_point=entry_point)


_register()
