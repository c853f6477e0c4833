"""A bot that plays an RLlib policy: an RLModule trained with :func:`conquian_train.rllib.ppo_config`.

Spec ``rllib:PATH[,module_id=shared][,deterministic=true|false]``; ``PATH`` is an RLlib
checkpoint directory: an algorithm's (``algo.save_to_path()``, as
``examples/rllib_selfplay.py`` writes), its ``learner_group/learner/rl_module`` directory,
or one RLModule's.  ``module`` names the policy in a multi-policy checkpoint (default
``shared``, the one self-play policy of :func:`~conquian_train.rllib.ppo_config`).

The module must read RLlib's action-masking observations (``{"observations": float32
(OBS_SIZE,), "action_mask": float32 (85,)}``, ``OBS_SIZE`` from
:data:`conquian_env.layout.OBSERVATION`), as RLlib's ``ActionMaskingTorchRLModule`` does; the bot
masks the logits again itself, so it never chooses an illegal action.
``deterministic`` (default true) plays the most likely action; false samples from the
policy with the bot's generator, re-seeded each game.  Needs ``ray[rllib]`` and torch.

A checkpoint path is read weights only (:func:`~agents.networks.rllib_model.load_module`):
no pickle in it runs, so it must hold the :class:`~agents.networks.rllib_model.MaskedPPOTorchRLModule`
that ``ppo_config`` trains; give any other RLModule as ``module``, loaded yourself from a
checkpoint you trust.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from conquian_env.seeding import bot_game_rng

from ..base import Agent, PlayerView
from ..catalog import bot
from ..params import Flag, bounded

__all__ = ["RLlibAgent"]


@bot(
    "rllib",
    "an RLlib policy (a checkpoint of conquian_train.rllib / examples/rllib_selfplay.py)",
    params={
        "module_id": "the policy in a multi-policy checkpoint",
        "deterministic": "argmax instead of sampling",
    },
    positional="PATH",
    needs="an rllib bot needs the checkpoint path, e.g. rllib:runs/rllib",
)
class RLlibAgent(Agent):
    """Plays an RLlib RLModule.  ``path``: a checkpoint (see the module docstring), or
    ``module``: an RLModule, an ``Algorithm`` or anything
    :func:`agents.networks.rllib_model.load_module` takes."""

    name = "rllib"

    @bounded(deterministic=Flag())
    def __init__(
        self,
        path: str | None = None,
        module: Any = None,
        module_id: str = "shared",
        deterministic: bool = True,
        seed: int | None = None,
    ):
        if (path is None) == (module is None):
            raise ValueError("give the checkpoint path or the module (exactly one)")
        from .rllib_model import load_module

        self.path = path
        self.module_id = module_id
        self.module = load_module(path if module is None else module, module_id)
        self.module.eval()
        self.deterministic = bool(deterministic)
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def reset(self, player: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = bot_game_rng(seed, self.seed)

    def logits(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The policy's action logits for one observation (illegal actions at -inf)."""
        import torch

        obs = torch.from_numpy(np.asarray(observation, dtype=np.float32)[None])
        mask = torch.from_numpy(np.asarray(action_mask, dtype=np.float32)[None])
        with torch.no_grad():
            out = self.module.forward_inference({"obs": {"observations": obs, "action_mask": mask}})
        logits = out["action_dist_inputs"][0].cpu().numpy().astype(np.float64)
        return np.where(np.asarray(action_mask) > 0, logits, -np.inf)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        from ..model_files import best_legal

        logits = self.logits(observation, action_mask)
        legal = np.asarray(action_mask) > 0
        if self.deterministic or not np.isfinite(logits[legal]).all():
            return best_legal(logits, legal, self.name)  # never illegal, even for NaN logits (warned once)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(self.rng.choice(len(p), p=p))
