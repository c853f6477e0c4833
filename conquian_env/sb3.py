"""Stable-Baselines3 ``VecEnv`` over the batched engine (needs ``stable-baselines3``).

::

    import torch
    from sb3_contrib import MaskablePPO
    from conquian_env.sb3 import ConquianVecEnv
    torch.set_num_threads(1)  # torch's default threads fight the engine for the cores: many times slower
    venv = ConquianVecEnv(256, opponent="greedy", seed=0)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64).learn(1_000_000)

The games, the opponents and the observations are those of
:class:`conquian_env.vector_env.ConquianVectorEnv` (same arguments); this class speaks
SB3's ``VecEnv`` protocol instead of Gymnasium's: ``reset()`` returns only observations,
``step`` returns a list of info dicts (with ``terminal_observation``, ``result`` +1/-1/0,
``illegal_action`` and ``unplayed_results`` where they apply; ``reset_infos`` has
``unplayed_results`` too: the results of deals that ended before the learner's first
decision, dealt anew and no episodes, so ``VecMonitor`` does not count them), and
``env_method("action_masks")`` gives the per-game masks MaskablePPO asks for.
One opponent object serves all the games, so ``env_method`` on one of its methods (e.g.
``add_snapshot`` of a :class:`conquian_train.pool.BatchPool`) calls it once and returns a
one-element list.
Wrap it in ``VecMonitor`` for episode statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from .extras import missing

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices
except ImportError as err:
    raise missing(err, "conquian_env.sb3") from None

from .actions import NUM_ACTIONS
from .vector_env import SeatGames


class ConquianVecEnv(VecEnv):
    """``num_envs`` games, one learning seat each, as an SB3 ``VecEnv`` (see the module docstring)."""

    def __init__(self, num_envs: int, opponent: Any = "random", **kwargs: Any):
        self.core = SeatGames(num_envs, opponent, **kwargs)
        self.render_mode = None
        super().__init__(self.core.num_envs, self.core.encoder.space, spaces.Discrete(NUM_ACTIONS))
        self._actions: np.ndarray | None = None
        self._masks: np.ndarray | None = None

    @property
    def games(self):
        return self.core.games

    @property
    def opponent(self) -> Any:
        """The opponent serving every game (``set_attr("opponent", ...)`` swaps it)."""
        return self.core.opponent

    def set_opponent(self, opponent: Any) -> None:
        """Swap the opponent from the next move on (e.g. a snapshot of the learner)."""
        self.core.set_opponent(opponent)

    # ---------------------------------------------------------------- VecEnv protocol
    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, unplayed = self.core.reset(seed)
        self._reset_seeds()
        self._reset_options()
        self._masks = None
        self.reset_infos = [{"seat": int(s)} for s in self.core.seats]
        for row, results in unplayed.items():
            self.reset_infos[row]["unplayed_results"] = results
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        a = np.asarray(actions)
        if a.shape not in ((self.num_envs,), (self.num_envs, 1)):
            raise ValueError(
                f"actions must be {self.num_envs} action ids, shape ({self.num_envs},) or ({self.num_envs}, 1) "
                f"(one per game), got shape {a.shape}"
            )
        self._actions = a.reshape(self.num_envs)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_async() must come before step_wait()")
        obs, rewards, dones, illegal, final, unplayed = self.core.step(self._actions)
        self._actions = None
        self._masks = None
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for row, last in final.items():
            infos[row] = {"terminal_observation": last, "result": int(rewards[row]), "TimeLimit.truncated": False}
        for row in np.flatnonzero(illegal):
            infos[int(row)]["illegal_action"] = True
        for row, results in unplayed.items():
            infos[row]["unplayed_results"] = results
        return obs, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        if self._masks is None:
            self._masks = self.core.action_masks()
        return self._masks

    def close(self) -> None:
        pass

    def _indices(self, indices: VecEnvIndices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        if attr_name == "opponent":
            self.set_opponent(value)
        else:
            raise AttributeError(f"ConquianVecEnv has no per-game attribute {attr_name!r} to set")

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._indices(indices)]
        if method_name == "set_opponent":
            self.set_opponent(*method_args, **method_kwargs)
            return [None for _ in self._indices(indices)]
        shared = getattr(self.core.opponent, method_name, None)
        if shared is not None and callable(shared) and not method_name.startswith("_"):
            # one opponent object serves every game: its methods run once (a one-element list)
            return [shared(*method_args, **method_kwargs)]
        raise AttributeError(
            f"ConquianVecEnv has no per-game method {method_name!r} (it has action_masks, set_opponent and the "
            f"opponent's methods)"
        )

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._indices(indices)]
