"""The bots that play a trained network: the PPO policy and its model reader
(:mod:`agents.networks.ppo`, numpy at play, torch only to read a checkpoint) and an RLlib
checkpoint's policy (:mod:`agents.networks.rllib_bot`, its network :mod:`agents.networks.rllib_model`).

>>> from agents.networks import PPOAgent

The names below are imported from their module on first use, so that importing one of them
imports neither torch nor ray."""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_HOME = {
    "PPOAgent": "ppo",
    "PolicyAgent": "ppo",
    "NumpyPolicy": "ppo",
    "load_policy": "ppo",
    "RLlibAgent": "rllib_bot",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
