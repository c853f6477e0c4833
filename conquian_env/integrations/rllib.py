"""Conquian for RLlib's new API stack: a multi-agent env (the env side only).

Needs ``ray[rllib]`` (2.x, new API stack; tested with 2.60).  ``import conquian_env`` never
imports ray; this module does.  Self-play PPO with masks is
:func:`conquian_train.rllib.ppo_config` (the training config), its masked network
:class:`agents.networks.rllib_model.MaskedPPOTorchRLModule` and a checkpoint plays as the bot
:class:`agents.networks.rllib_bot.RLlibAgent` (``rllib:PATH``)::

    import ray
    from conquian_train.rllib import ppo_config

    ray.init(num_cpus=2, include_dashboard=False)
    algo = ppo_config(num_env_runners=1).build_algo()
    for _ in range(10):
        result = algo.train()
    path = algo.save_to_path("runs/rllib")            # an algorithm checkpoint directory

    # play it as a bot: spec rllib:runs/rllib, or
    from agents.networks.rllib_bot import RLlibAgent
    bot = RLlibAgent("runs/rllib")

What RLlib gets (:class:`ConquianMultiAgentEnv`):

* agents ``player_0`` and ``player_1``; each step only the player to move gets an
  observation, and acts.  A Conquian turn is several decisions, so the same player often
  gets several observations in a row: RLlib keeps each agent's own sequence of
  observations and actions, whatever the other agent does in between.
* observations ``Dict(observations=Box(0, 1, (OBS_SIZE,), float32), action_mask=Box(0, 1,
  (85,), float32))`` (``OBS_SIZE``: :data:`conquian_env.layout.OBSERVATION`): the keys and
  dtypes that RLlib's action-masking RLModule example (``ActionMaskingTorchRLModule``) and
  :class:`MaskedPPOTorchRLModule` read; the values are the AEC environment's observation and
  legal-action mask as floats.
* rewards 0 during the game; when it ends BOTH players get their result (+1 / -1, 0 for a
  draw) with ``terminateds`` true for both and ``"__all__"``, together with each one's final
  observation (game over, an all-zero mask).  The player who did not make the last move
  thereby gets its reward on its own last action, as RLlib's multi-agent episodes want
  (an agent's reward without its observation would be held until its next observation,
  which never comes).
* ``infos``: the numeric infos of ``conquian_env.env(numeric_infos=True)`` (same keys, int
  values, every step), for the agents that got an observation.

``env_config`` keys: ``rules`` (a :class:`~conquian_env.rules.Rules` or a dict of its fields) or
its fields themselves (each a bool, default false), ``illegal_action``
(``"penalize"``, the default: an illegal action loses the game with -1, as in the AEC env;
``"raise"``: it raises, to prove that training never plays one) and ``first`` (0, 1 or
``"random"``, the default: who moves first in each game, drawn from the env's seed).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from gymnasium import spaces

from ..extras import missing

try:  # Ray first: its extra's line also says to install torch first
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as err:
    raise missing(err, "conquian_env.integrations.rllib", extra="rllib") from None

from ..actions import NUM_ACTIONS
from ..env import AGENTS, raw_env
from ..observation import OBS_SIZE
from ..rules import Rules, resolve
from ..seeding import FIRST_PLAYER, stream_rng

__all__ = ["ConquianMultiAgentEnv", "observation_space"]

_FIRST_VALUES = (0, 1, "random")


def observation_space() -> spaces.Dict:
    """What a player observes: ``Dict(observations=Box(0, 1, (OBS_SIZE,)), action_mask=Box(0, 1, (NUM_ACTIONS,)))``,
    float32, the keys RLlib's action-masking modules read."""
    return spaces.Dict(
        {
            "observations": spaces.Box(0.0, 1.0, (OBS_SIZE,), np.float32),
            "action_mask": spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        }
    )


class ConquianMultiAgentEnv(MultiAgentEnv):
    """Conquian as an RLlib ``MultiAgentEnv`` (see the module docstring).

    ``config`` (RLlib's ``env_config``): ``rules`` or its fields, ``illegal_action``, ``first``.
    ``reset(options=...)`` takes the AEC environment's options (``hands``, ``stock``,
    ``first``) for a stacked deal.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__()
        config = dict(config or {})
        known = ("rules", *Rules.field_names(), "illegal_action", "first")
        unknown = sorted(set(config) - set(known))
        if unknown:
            raise ValueError(f"unknown env_config key(s) {unknown}; known: {', '.join(known)}")
        rules = resolve(config.get("rules"), **{k: config[k] for k in Rules.field_names() if k in config})
        self.first = config.get("first", "random")
        if self.first not in _FIRST_VALUES:
            raise ValueError(f"first must be one of {_FIRST_VALUES}, got {self.first!r}")
        self.aec = raw_env(
            rules=rules,
            illegal_action=config.get("illegal_action", "penalize"),
            numeric_infos=True,
        )
        obs_space = observation_space()
        self.possible_agents = list(AGENTS)
        # both seats stay in the episode from reset to the end (RLlib's checks ask env.agents)
        self.agents = list(AGENTS)
        self.observation_spaces = {a: obs_space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self._first_rng = np.random.default_rng()

    def _obs(self, agent: str) -> dict[str, np.ndarray]:
        o = self.aec.observe(agent)
        return {
            "observations": o["observation"].astype(np.float32),
            "action_mask": o["action_mask"].astype(np.float32),
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._first_rng = stream_rng(seed, FIRST_PLAYER)
        options = dict(options or {})
        if "first" not in options and self.first != "random":
            options["first"] = self.first
        elif "first" not in options:
            options["first"] = int(self._first_rng.integers(2))
        self.aec.reset(seed=seed, options=options)
        agent = self.aec.agent_selection
        return {agent: self._obs(agent)}, {agent: dict(self.aec.infos[agent])}

    def step(self, action_dict: dict[str, Any]):
        agent = self.aec.agent_selection
        if self.aec.game is None or self.aec.game.is_terminal():
            raise RuntimeError("the game is over: call reset()")
        if set(action_dict) != {agent}:
            raise ValueError(f"{agent} is to move; got actions for {sorted(action_dict)}")
        self.aec.step(int(action_dict[agent]))
        game = self.aec.game
        assert game is not None
        if game.is_terminal():  # a result (or a forfeit): both seats get theirs, and their last view
            obs = {a: self._obs(a) for a in AGENTS}
            rewards = {a: float(self.aec.rewards[a]) for a in AGENTS}
            terminateds = {**{a: True for a in AGENTS}, "__all__": True}
            infos = {a: dict(self.aec.infos[a]) for a in AGENTS}
        else:
            nxt = self.aec.agent_selection
            obs = {nxt: self._obs(nxt)}
            rewards = {a: 0.0 for a in AGENTS}
            terminateds = {"__all__": False}
            infos = {nxt: dict(self.aec.infos[nxt])}
        return obs, rewards, terminateds, {"__all__": False}, infos

    def render(self) -> str:
        from ..render import render_text

        assert self.aec.game is not None, "call reset() first"
        return render_text(self.aec.game, AGENTS)


class _ConfigDeprecationNotice(logging.Filter):
    """Drops RLlib's notice that ``RLModule(config=[RLModuleConfig object])`` is deprecated: RLlib
    2.x's own ``RLModule.__init__`` builds the deprecated ``RLModuleConfig`` on every construction of
    every RLModule (ours passes the keyword arguments RLlib asks for, and so does the
    ``MultiRLModule`` that RLlib builds around it), so the notice names nothing to change."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "RLModule(config=[RLModuleConfig object])" not in record.getMessage()


def _drop_rlmodule_config_notice() -> None:
    """Put the filter on RLlib's deprecation logger once per process: the notice comes once per
    process, from the first RLModule built, which is RLlib's ``MultiRLModule`` when an algorithm is
    built from :func:`ppo_config` (a filter around our own constructor alone missed it); every
    process that builds our module imports this one first (env runners too)."""
    log = logging.getLogger("ray._common.deprecation")
    if not any(isinstance(f, _ConfigDeprecationNotice) for f in log.filters):
        log.addFilter(_ConfigDeprecationNotice())


_drop_rlmodule_config_notice()
