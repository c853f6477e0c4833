"""Bots that play a trained policy: MaskablePPO models (sb3-contrib ``.zip`` files).

A model must have been trained on Conquian with ``Discrete(85)`` actions and one of two
observations, told apart by their size:

* the raw observation vector (``Box(0, 1, (456,), int8)``, :mod:`conquian_env.observation`),
  e.g. through :class:`conquian_env.wrappers.SingleAgentEnv`;
* the ``"meld"`` features (``(865,)`` float32, :mod:`agents.features`), as ``train.py``
  trains by default.

The bot plays with the legal-action mask, so it never chooses an illegal action.  Spec:
``ppo[:PATH.zip][,deterministic=true|false]``; with no path it plays the model shipped
in the package (:data:`DEFAULT_MODEL`, made by the recipe in the README).

Inference does not go through torch: the policy's layers are copied into numpy arrays
once (:class:`NumpyPolicy`), which is several times faster than ``model.predict`` for
one observation and lets worker processes play snapshots of a policy without torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.actions import NUM_ACTIONS
from conquian_env.observation import OBS_SIZE

from .base import Agent, PlayerView

#: the model shipped with the package (``ppo`` with no path)
DEFAULT_MODEL = Path(__file__).resolve().parent / "data" / "conquian_ppo.zip"

_ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
}


class NumpyPolicy:
    """The actor of an SB3 MLP actor-critic policy as numpy arrays (picklable, torch-free).

    ``layers`` is a list of ``(weight, bias, activation name)``; the last layer gives
    the 85 action logits.  ``features`` names the observation the policy reads
    (``"raw"`` or ``"meld"``).
    """

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray, str]], features: str):
        if features not in ("raw", "meld"):
            raise ValueError(f"features must be 'raw' or 'meld', got {features!r}")
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32), act) for w, b, act in layers]
        self.features = features
        for _, _, act in self.layers:
            if act not in _ACTIVATIONS:
                raise ValueError(f"unsupported activation {act!r}; supported: {sorted(_ACTIVATIONS)}")
        if self.layers[-1][0].shape[0] != NUM_ACTIONS:
            raise ValueError(f"the last layer must give {NUM_ACTIONS} action logits, got {self.layers[-1][0].shape[0]}")

    @classmethod
    def from_sb3(cls, policy: Any) -> NumpyPolicy:
        """Copy the actor of a (Maskable)ActorCriticPolicy with an MLP extractor."""
        import torch

        layers: list[tuple[np.ndarray, np.ndarray, str]] = []
        modules = list(policy.mlp_extractor.policy_net)
        i = 0
        with torch.no_grad():
            while i < len(modules):
                lin = modules[i]
                if not isinstance(lin, torch.nn.Linear):
                    raise ValueError(f"unsupported policy network layer {lin!r}: only Linear + activation MLPs")
                act = "Identity"
                if i + 1 < len(modules) and not isinstance(modules[i + 1], torch.nn.Linear):
                    act = type(modules[i + 1]).__name__
                    i += 1
                layers.append((lin.weight.cpu().numpy().copy(), lin.bias.cpu().numpy().copy(), act))
                i += 1
            head = policy.action_net
            layers.append((head.weight.cpu().numpy().copy(), head.bias.cpu().numpy().copy(), "Identity"))
        size = policy.observation_space.shape[0]
        return cls(layers, features=features_for_size(size))

    def logits(self, obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32)
        for w, b, act in self.layers:
            x = _ACTIVATIONS[act](x @ w.T + b)
        return x

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator | None = None) -> int:
        """Best legal action, or one sampled from the masked softmax when ``rng`` is given."""
        logits = np.where(np.asarray(mask, dtype=bool), self.logits(obs), -np.inf)
        if rng is None:
            return int(np.argmax(logits))
        p = np.exp(logits - logits.max())
        p /= p.sum()
        return int(rng.choice(NUM_ACTIONS, p=p))


def features_for_size(size: int) -> str:
    """Which observation a model of input size ``size`` reads."""
    from .features import FEATURE_SIZE

    if size == OBS_SIZE:
        return "raw"
    if size == FEATURE_SIZE:
        return "meld"
    raise ValueError(
        f"a Conquian policy reads {OBS_SIZE} (raw observation) or {FEATURE_SIZE} ('meld' features) inputs, got {size}"
    )


class PolicyAgent(Agent):
    """Plays a :class:`NumpyPolicy` with the mask: argmax, or sampled when not deterministic."""

    name = "policy"

    def __init__(self, policy: NumpyPolicy, deterministic: bool = True, seed: int | None = None):
        self.policy = policy
        self.deterministic = deterministic
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self._encoder = None
        if policy.features == "meld":
            from .features import FeatureEncoder

            self._encoder = FeatureEncoder()

    def reset(self, player: int, seed: int | None = None) -> None:
        if self._encoder is not None:
            self._encoder.reset()
        if seed is not None:
            self.rng = np.random.default_rng([seed, 0 if self.seed is None else self.seed])

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        obs = observation if self._encoder is None else self._encoder.encode(view._state, view.player)
        return self.policy.act(obs, action_mask, None if self.deterministic else self.rng)


def load_policy(path: str | Path) -> NumpyPolicy:
    """Load a MaskablePPO ``.zip`` and return its actor as a :class:`NumpyPolicy` (clear errors)."""
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
        model = MaskablePPO.load(str(file), device="cpu")
    except Exception as err:
        raise ValueError(f"cannot load {str(file)!r} as a MaskablePPO model: {type(err).__name__}: {err}") from err
    obs_shape = getattr(model.observation_space, "shape", None)
    n_actions = getattr(model.action_space, "n", None)
    if n_actions != NUM_ACTIONS or obs_shape is None or len(obs_shape) != 1:
        raise ValueError(
            f"model {str(file)!r} has observation shape {obs_shape} and {n_actions} actions; "
            f"a Conquian model needs {NUM_ACTIONS} actions and a flat observation"
        )
    try:
        return NumpyPolicy.from_sb3(model.policy)
    except ValueError as err:
        raise ValueError(f"model {str(file)!r}: {err}") from err


class PPOAgent(PolicyAgent):
    """A MaskablePPO model file as a bot (spec ``ppo[:PATH.zip]``)."""

    name = "ppo"

    def __init__(self, path: str | None = None, deterministic: bool = True, seed: int | None = None):
        if not isinstance(deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {deterministic!r}")
        file = DEFAULT_MODEL if path is None else Path(path)
        if path is None and not file.is_file():
            raise ValueError(f"the shipped model {str(file)!r} is missing from this installation")
        super().__init__(load_policy(file), deterministic=deterministic, seed=seed)
        self.name = "ppo" if path is None else f"ppo:{file.name}"
