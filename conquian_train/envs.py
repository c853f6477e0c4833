"""The learner's games: each against an opponent drawn from the pool (fixed bots and snapshots of the learner)."""

from __future__ import annotations

from conquian_env.rules import STANDARD, Rules

from .pool import BatchPool, parse_pool
from .seeding import worker_seed


def make_vec_env(
    opponents: tuple[str, ...], n_envs: int, *, features: str = "meld", rules: Rules = STANDARD, seed: int = 0,
    max_snapshots: int = 10,
):  # fmt: skip
    """``n_envs`` games of the learner as an SB3 ``VecEnv`` (in a ``VecMonitor``): all of them in one
    compiled engine (:class:`conquian_env.sb3.ConquianVecEnv`), the pool's opponents deciding in
    batches (:class:`conquian_train.pool.BatchPool`).  ``opponents`` is the pool, ``SPEC@WEIGHT`` each;
    ``rules`` the :class:`~conquian_env.rules.Rules` the games are played by.

    (The per-game paths, ``SingleAgentEnv`` in ``SubprocVecEnv`` or ``DummyVecEnv`` workers, are
    gone: the batched one trains several times faster, docs/benchmarks.md "Speed of the batched engine".)
    """
    from stable_baselines3.common.vec_env import VecMonitor

    from conquian_env.sb3 import ConquianVecEnv

    opponent = BatchPool(parse_pool(opponents), seed=worker_seed(seed, 1), max_snapshots=max_snapshots)
    return VecMonitor(ConquianVecEnv(n_envs, opponent, rules=rules, observation=features, seed=seed))
