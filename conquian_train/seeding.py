"""The training recipes' seed streams: the words after the seed in
:func:`conquian_env.seeding.derive_seed` (and :func:`~conquian_env.seeding.stream_rng`).

The derivations themselves are the environment's (:mod:`conquian_env.seeding`); these are the
words the recipes add.  Their values are the ones the recipes used before they had names, so
the same seed still trains the same run.  A new recipe adds its word here.
"""

from __future__ import annotations

from conquian_env.seeding import derive_seed

__all__ = [
    "EXIT_ANALYSIS", "EXIT_GAMES", "IMITATION_SPLIT", "PPO_SEGMENT", "WARM_START_GAMES",
    "pool_member_seed", "worker_seed",
]  # fmt: skip

# ---------------------------------------------------------------- stream words (derive_seed(seed, WORD, ...))
#: expert iteration's self-play games: ``derive_seed(seed, EXIT_GAMES, round, game)``
EXIT_GAMES = 23
#: expert iteration's search analysis: ``derive_seed(seed, EXIT_ANALYSIS, round, chunk)``
EXIT_ANALYSIS = 29
#: a PPO run's segment from step ``step`` on (deals and every random number):
#: ``derive_seed(seed, PPO_SEGMENT, step)``
PPO_SEGMENT = 31
#: the warm start's (DAgger) games: ``derive_seed(seed, WARM_START_GAMES, round, game)``
WARM_START_GAMES = 11

# ---------------------------------------------------------------- stream words (stream_rng(seed, WORD, ...))
#: behaviour cloning's held-out split and batch order: ``stream_rng(seed, IMITATION_SPLIT, rows)``
IMITATION_SPLIT = 5


def pool_member_seed(seed: int, member: int) -> int:
    """The seed of the opponent pool's member number ``member`` when the pool is reseeded
    (:meth:`conquian_train.pool.BatchPool.reseed`): ``derive_seed(seed, member)``."""
    return derive_seed(seed, member)


def worker_seed(seed: int, rank: int) -> int:
    """The seed of a training run's environment (or opponent pool) number ``rank``:
    ``seed * 1000 + rank``, as always (not :func:`~conquian_env.seeding.derive_seed`; the batched
    pool is rank 1)."""
    return seed * 1000 + rank
