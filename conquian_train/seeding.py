"""The training recipes' seed streams: the words after the seed in
:func:`conquian_env.seeding.derive_seed` (and :func:`~conquian_env.seeding.stream_rng`).

The derivations themselves are the environment's (:mod:`conquian_env.seeding`); these are the
words the recipes add.  Their values are the ones the recipes used before they had names, so
the same seed still trains the same run.  A new recipe adds its word here.
"""

from __future__ import annotations

from conquian_env.seeding import derive_seed

__all__ = [
    "BELIEF_BOTS", "BELIEF_DEALS", "BELIEF_FIT", "DISTILL_DEALS", "DISTILL_FIT", "DISTILL_LABELS", "DISTILL_SEATS",
    "EXIT_ANALYSIS", "EXIT_GAMES", "IMITATION_SPLIT", "PPO_SEGMENT", "SELFPLAY_SEGMENT", "WARM_START_GAMES",
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
#: a self-play run's segment from frame ``frames`` on (deals, sampling, minibatch order, the pool's draws):
#: ``derive_seed(seed, SELFPLAY_SEGMENT, frames)``
SELFPLAY_SEGMENT = 37
#: the warm start's (DAgger) games: ``derive_seed(seed, WARM_START_GAMES, round, game)``
WARM_START_GAMES = 11
#: the belief recipe's games: deal ``derive_seed(seed, BELIEF_DEALS, game)``, the bot of kind ``k``
#: ``derive_seed(seed, BELIEF_BOTS, k)``, the fit's subset, split and weights ``derive_seed(seed, BELIEF_FIT)``
BELIEF_DEALS = 0xBE11E0
BELIEF_BOTS = 0xBE11E1
BELIEF_FIT = 0xBE11E2
#: the distill recipe's games: deal ``derive_seed(seed, DISTILL_DEALS, game)``, first player and seat
#: ``derive_seed(seed, DISTILL_SEATS, game)``, the labels of a shard ``derive_seed(seed, DISTILL_LABELS,
#: first game)``, the fit's weights and batch order ``derive_seed(seed, DISTILL_FIT[, epoch])``
DISTILL_DEALS = 0xD1571
DISTILL_SEATS = 0xD1572
DISTILL_LABELS = 0xD1573
DISTILL_FIT = 0xD1574

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
