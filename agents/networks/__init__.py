"""The bots that play a trained network: the PPO policy and its model reader
(:mod:`agents.networks.ppo`, numpy at play, torch only to read a checkpoint), its batched form
(:mod:`agents.networks.batched`: one forward pass for many games) and an RLlib
checkpoint's policy (:mod:`agents.networks.rllib_bot`, its network :mod:`agents.networks.rllib_model`).

>>> from agents.networks import PPOAgent

The names below are imported from their module on first use, so that importing one of them
imports neither torch nor ray."""

from __future__ import annotations

from ..lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ppo": ["PPOAgent", "PolicyAgent", "NumpyPolicy", "load_policy"],
        "batched": ["BatchPolicy"],
        "rllib_bot": ["RLlibAgent"],
    },
)
