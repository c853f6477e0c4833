"""Conquian for Tianshou 2.x's multi-agent pipeline, each seat credited with its own result.

Needs ``tianshou`` (2.x).  ``import conquian_env`` never imports it; this module does.  A
drop-in for ``tianshou.env.PettingZooEnv(conquian_env.env())`` in Tianshou's PettingZoo
recipe (``Collector`` + ``MultiAgentOffPolicyAlgorithm``)::

    from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from conquian_env.integrations.tianshou import ConquianTianshouEnv

    env = ConquianTianshouEnv()
    algo = MultiAgentOffPolicyAlgorithm(algorithms=[dqn, dqn], env=env)   # one DQN: self-play
    envs = DummyVectorEnv([ConquianTianshouEnv for _ in range(4)])
    collector = Collector(algo, envs, VectorReplayBuffer(20_000, 4), exploration_noise=True)

Why not Tianshou's own wrapper: ``PettingZooEnv`` gives each stored step the reward
vector of the env at that step, and the dispatcher credits a step to the seat that acted
in it.  In Conquian the game ends on one seat's move and the result reaches both seats at
once, so only the last mover's step ever sees a result: the other seat's transitions sum
to 0 whatever it did.  (And without ``numeric_infos=True`` Tianshou's buffer meets info
dicts whose keys change at the end of a game.)

What this env gives Tianshou:

* observations ``{"agent_id": "player_0" | "player_1", "obs": the AEC observation (456
  int8), "mask": the legal actions (85 bool)}``, as ``PettingZooEnv`` gives them.
* rewards: a vector ``[r_player_0, r_player_1]`` in which a seat's entry is what that seat
  received since its previous step, delivered on the seat's own step (in Conquian: 0 until
  the game ends).
* the closing step: when a move ends the game, the seat that did not make it (if it made
  any decision in the game) is given one more observation, its view of the finished game
  with no legal action (an all-false mask; any action id is accepted there and nothing is
  played), and that step carries its result and ``terminated``.  So each seat's
  transitions sum to its result, the last one of each seat is the one that ends the game,
  and an episode is the game's decisions plus at most one closing step.
* infos: the numeric infos of ``conquian_env.env(numeric_infos=True)`` (the same int keys
  on every step), for the seat of the returned observation.

What stays Tianshou's: its multi-agent rows are one env step each, so a row's
``obs_next`` is the next observation of the game, which is the other seat's when the turn
passes.  For transitions from each seat's decision to its own next observation, feed a
buffer from :class:`conquian_env.transitions.TransitionRecorder` instead.

``first``: who moves first in each game, 0, 1 or ``"random"`` (the default, drawn from the
seed).  ``forcing`` and ``illegal_action`` are the AEC environment's options.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tianshou.env import PettingZooEnv

from ..actions import NUM_ACTIONS
from ..env import AGENTS, env

__all__ = ["ConquianTianshouEnv"]

_FIRST_VALUES = (0, 1, "random")
_NO_LEGAL_ACTION = np.zeros(NUM_ACTIONS, dtype=bool)


class ConquianTianshouEnv(PettingZooEnv):
    """Conquian as Tianshou's ``PettingZooEnv``, each seat's result on its own last step
    (see the module docstring)."""

    def __init__(self, *, forcing: bool = False, illegal_action: str = "penalize", first: int | str = "random"):
        if first not in _FIRST_VALUES:
            raise ValueError(f"first must be one of {_FIRST_VALUES}, got {first!r}")
        self.first = first
        self._first_rng = np.random.default_rng()
        self._reset_state()
        # PettingZooEnv.__init__ reads the spaces and calls self.reset()
        super().__init__(env(forcing=forcing, illegal_action=illegal_action, numeric_infos=True))

    def _reset_state(self) -> None:
        self._owed = {a: 0.0 for a in AGENTS}  # received and not yet delivered on a step of that seat
        self._acted: set[str] = set()
        self._closing: list[str] = []  # seats still to get their closing step
        self._over = False

    # ----------------------------------------------------------------- API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None, **kwargs: Any) -> tuple[dict, dict]:
        if kwargs:
            raise TypeError(f"reset() takes seed and options, got {sorted(kwargs)}")
        if seed is not None:
            self._first_rng = np.random.default_rng([seed, 1])
        options = dict(options or {})
        if "first" not in options:
            options["first"] = self.first if self.first != "random" else int(self._first_rng.integers(2))
        self.env.reset(seed=seed, options=options)
        self._reset_state()
        agent = self.env.agent_selection
        return self._obs(agent), dict(self.env.infos[agent])

    def seed(self, seed: Any = None) -> None:
        self.reset(seed=seed)

    def step(self, action: Any) -> tuple[dict, list[float], bool, bool, dict]:
        if self._over:
            raise RuntimeError("the game is over: call reset()")
        rewards = [0.0] * len(AGENTS)
        if self._closing:  # a closing step: the game is over, nothing is played
            if isinstance(action, np.ndarray) and action.size == 1:
                action = action.item()
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise ValueError(f"an action must be an integer in 0..{NUM_ACTIONS - 1}, got {action!r}")
            if not 0 <= int(action) < NUM_ACTIONS:
                raise ValueError(f"an action must be an integer in 0..{NUM_ACTIONS - 1}, got {action!r}")
            seat = self._closing.pop(0)
            rewards[self.agent_idx[seat]] = self._deliver(seat)
            if self._closing:
                return self._closing_obs(self._closing[0]), rewards, False, False, self._info(self._closing[0])
            self._over = True
            return self._closing_obs(seat), rewards, True, False, self._info(seat)

        seat = self.env.agent_selection
        self.env.step(action)
        self._acted.add(seat)
        for a in AGENTS:
            self._owed[a] += float(self.env.rewards[a])
        rewards[self.agent_idx[seat]] = self._deliver(seat)
        game = self.env.unwrapped.game
        if not game.is_terminal():
            nxt = self.env.agent_selection
            return self._obs(nxt), rewards, False, False, self._info(nxt)
        self._closing = [a for a in AGENTS if a != seat and a in self._acted]
        if self._closing:
            return self._closing_obs(self._closing[0]), rewards, False, False, self._info(self._closing[0])
        self._over = True
        return self._obs(seat), rewards, True, False, self._info(seat)

    # ----------------------------------------------------------------- helpers
    def _deliver(self, seat: str) -> float:
        owed, self._owed[seat] = self._owed[seat], 0.0
        return owed

    def _obs(self, agent: str) -> dict[str, Any]:
        o = self.env.observe(agent)
        return {"agent_id": agent, "obs": o["observation"], "mask": o["action_mask"].astype(bool)}

    def _closing_obs(self, agent: str) -> dict[str, Any]:
        o = self.env.observe(agent)  # the finished game, as this seat sees it
        return {"agent_id": agent, "obs": o["observation"], "mask": _NO_LEGAL_ACTION.copy()}

    def _info(self, agent: str) -> dict[str, int]:
        return dict(self.env.infos[agent])
