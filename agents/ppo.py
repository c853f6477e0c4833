"""A bot that plays a MaskablePPO model saved with ``model.save`` (sb3-contrib ``.zip`` file).

The model must have been trained on the environment's observation vector
(``Box(0, 1, (456,), int8)``) and ``Discrete(85)`` actions, e.g. through
:class:`conquian_env.wrappers.SingleAgentEnv`.  It plays with the legal-action mask, so
it never chooses an illegal action.  Spec: ``ppo:PATH.zip[,deterministic=false]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conquian_env.actions import NUM_ACTIONS
from conquian_env.observation import OBS_SIZE

from .base import Agent, PlayerView


class PPOAgent(Agent):
    name = "ppo"

    def __init__(self, path: str, deterministic: bool = True, seed: int | None = None, device: str = "cpu"):
        file = Path(path)
        if not file.is_file() and file.suffix != ".zip" and file.with_suffix(".zip").is_file():
            file = file.with_suffix(".zip")
        if not file.is_file():
            raise ValueError(f"no model file at {str(path)!r}: give the .zip written by MaskablePPO.save()")
        try:
            from sb3_contrib import MaskablePPO
        except ImportError as err:  # torch and sb3-contrib are the 'train' extra
            raise ValueError("the ppo bot needs sb3-contrib and torch: pip install 'conquian-env[train]'") from err
        try:
            self.model = MaskablePPO.load(str(file), device=device)
        except Exception as err:
            raise ValueError(f"cannot load {str(file)!r} as a MaskablePPO model: {err}") from err
        obs_shape = getattr(self.model.observation_space, "shape", None)
        n_actions = getattr(self.model.action_space, "n", None)
        if obs_shape != (OBS_SIZE,) or n_actions != NUM_ACTIONS:
            raise ValueError(
                f"model {str(file)!r} has observation shape {obs_shape} and {n_actions} actions; "
                f"a Conquian model needs ({OBS_SIZE},) and {NUM_ACTIONS}"
            )
        self.deterministic = bool(deterministic)
        self.seed = seed
        self.name = f"ppo:{file.name}"

    def reset(self, player: int, seed: int | None = None) -> None:
        if not self.deterministic and seed is not None:
            import torch

            torch.manual_seed(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        mask = np.asarray(action_mask, dtype=bool)
        action, _ = self.model.predict(observation, action_masks=mask, deterministic=self.deterministic)
        a = int(action)
        if not mask[a]:  # cannot happen with a masked policy; never play an illegal move
            raise RuntimeError(f"model chose masked action {a}")
        return a
