"""The learner's games: each against an opponent drawn from the pool (fixed bots and snapshots of the learner)."""

from __future__ import annotations

from functools import partial

import gymnasium
import numpy as np

from agents.batched import BatchPool, PoolOpponent, parse_pool
from conquian_env.seeding import worker_seed


def make_vec_env(
    opponents: tuple[str, ...], n_envs: int, kind: str = "batched", *, features: str = "meld",
    forcing: bool = False, seed: int = 0, max_snapshots: int = 10,
):  # fmt: skip
    """``n_envs`` games of the learner as an SB3 ``VecEnv`` (in a ``VecMonitor``).

    ``kind`` ``batched``: all games in one compiled engine
    (:class:`conquian_env.sb3.ConquianVecEnv`), the pool's opponents deciding in batches;
    ``subproc``: :class:`conquian_env.wrappers.SingleAgentEnv` in worker processes;
    ``dummy``: the same in this process.  ``opponents`` is the pool, ``SPEC@WEIGHT`` each.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecMonitor

    pool = parse_pool(opponents)
    if kind == "batched":
        from conquian_env.sb3 import ConquianVecEnv

        opponent = BatchPool(pool, seed=worker_seed(seed, 1), max_snapshots=max_snapshots)
        return VecMonitor(ConquianVecEnv(n_envs, opponent, forcing=forcing, observation=features, seed=seed))
    if kind not in ("subproc", "dummy"):
        raise ValueError(f"kind must be 'batched', 'subproc' or 'dummy', got {kind!r}")
    fns = [partial(pool_env, pool, worker_seed(seed, rank), max_snapshots, features, forcing) for rank in range(n_envs)]
    venv = SubprocVecEnv(fns, start_method="spawn") if kind == "subproc" and len(fns) > 1 else DummyVecEnv(fns)
    venv.seed(seed)
    return VecMonitor(venv)


def pool_env(
    pool: list[tuple[str, float]], seed: int, max_snapshots: int, features: str, forcing: bool
) -> gymnasium.Env:
    """One SingleAgentEnv against the per-game opponent pool, with its methods for ``VecEnv.env_method``."""
    from agents.features import FeatureObservation
    from conquian_env.wrappers import SingleAgentEnv

    opponent = PoolOpponent(pool, seed=seed, max_snapshots=max_snapshots)
    env: gymnasium.Env = SingleAgentEnv(opponent=opponent, forcing=forcing)
    return PoolEnv(FeatureObservation(env) if features == "meld" else env, opponent)


class PoolEnv(gymnasium.Wrapper):
    """Outermost training wrapper: exposes the opponent pool to ``VecEnv.env_method``."""

    def __init__(self, env: gymnasium.Env, pool: PoolOpponent):
        super().__init__(env)
        self.add_snapshot, self.opponent_counts = pool.add_snapshot, pool.opponent_counts

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()
