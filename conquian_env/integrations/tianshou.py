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

* observations ``{"agent_id": "player_0" | "player_1", "obs": the AEC observation
  (``OBS_SIZE`` int8, :data:`conquian_env.layout.OBSERVATION`), "mask": the legal actions
  (85 bool)}``, as ``PettingZooEnv`` gives them.
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
passes (how often is counted in docs/integrations/tianshou.md): a learner that bootstraps from
``obs_next`` (DQN) would value its own move by the opponent's view.  :class:`SeatReplayBuffer`
is the Collector's buffer that also keeps, in ``seat_buffer.learn``, each seat's decisions
paired with that seat's own next observation; learn from that one::

    buffer = SeatReplayBuffer(total_size=20_000, buffer_num=4)
    collector = Collector(algo, envs, buffer, exploration_noise=True)
    collector.collect(n_step=16)
    algo.update(buffer=buffer.learn, sample_size=64)

``tianshou.env.PettingZooEnv(conquian_env.env())`` itself is refused with a ``TypeError``
naming this module (it would silently give each game's result to the last mover only).

``first``: who moves first in each game, 0, 1 or ``"random"`` (the default, drawn from the
seed).  ``rules`` (or its fields as keywords) and ``illegal_action`` are the AEC environment's
options.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ..extras import missing

try:
    from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer
    from tianshou.env import PettingZooEnv
except ImportError as err:
    raise missing(err, "conquian_env.integrations.tianshou") from None

from ..actions import NUM_ACTIONS
from ..env import AGENTS, env
from ..rules import Rules, resolve
from ..seeding import FIRST_PLAYER, stream_rng

__all__ = ["ConquianTianshouEnv", "SeatReplayBuffer"]

_FIRST_VALUES = (0, 1, "random")
_NO_LEGAL_ACTION = np.zeros(NUM_ACTIONS, dtype=bool)


class ConquianTianshouEnv(PettingZooEnv):
    """Conquian as Tianshou's ``PettingZooEnv``, each seat's result on its own last step
    (see the module docstring)."""

    def __init__(
        self,
        *,
        rules: Rules | None = None,
        illegal_action: str = "penalize",
        first: int | str = "random",
        **rule_fields: bool,
    ):
        if first not in _FIRST_VALUES:
            raise ValueError(f"first must be one of {_FIRST_VALUES}, got {first!r}")
        self.first = first
        self._first_rng = np.random.default_rng()
        self._reset_state()
        # PettingZooEnv.__init__ reads the spaces and calls self.reset()
        super().__init__(env(rules=resolve(rules, **rule_fields), illegal_action=illegal_action, numeric_infos=True))

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
            self._first_rng = stream_rng(seed, FIRST_PLAYER)
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


class SeatReplayBuffer(VectorReplayBuffer):
    """The Collector's ``VectorReplayBuffer`` (one sub-buffer per env, rows one env step
    each, as Tianshou stores them) that also pairs, in :attr:`learn`, every decision of a
    seat with that seat's own next observation.

    For :class:`ConquianTianshouEnv`'s stream.  A row of ``learn``: ``obs`` the seat's
    observation (``agent_id``, ``obs``, ``mask``) and ``act`` its decision; ``obs_next``
    the same seat's next observation in that game (its next decision, or its closing step's
    view of the finished game); ``rew`` the reward vector with that seat's entry only (its
    result on its last decision, 0 before); ``terminated`` on each seat's last decision of
    a game.  The closing steps are no decisions: their result moves onto the seat's last
    decision.  The last decision of the seat that ended the game has no later view of that
    seat: its ``obs_next`` repeats its ``obs`` (never read: the row is terminal).  A game
    still being played keeps each seat's last decision pending until its next observation
    arrives.  ``learn_size``: the size of :attr:`learn` (default ``total_size``).
    """

    def __init__(self, total_size: int, buffer_num: int, learn_size: int | None = None, **kwargs: Any):
        super().__init__(total_size, buffer_num, **kwargs)
        #: each seat's decisions with that seat's own next observation (learn from this one)
        self.learn = ReplayBuffer(learn_size or total_size)
        self._pending: list[dict[str, Batch]] = [{} for _ in range(buffer_num)]

    def reset(self, keep_statistics: bool = False) -> None:
        super().reset(keep_statistics=keep_statistics)
        self._pending = [{} for _ in range(self.buffer_num)]

    def add(self, batch: Any, buffer_ids: np.ndarray | list[int] | None = None) -> Any:
        out = super().add(batch, buffer_ids)
        envs = range(len(batch)) if buffer_ids is None else [int(i) for i in buffer_ids]
        for row, env_index in enumerate(envs):
            self._pair(env_index, batch[row])
        return out

    def _pair(self, env_index: int, row: Batch) -> None:
        pending = self._pending[env_index]
        seat = str(row.obs.agent_id)
        closing = not np.asarray(row.obs.mask).any()
        before = pending.pop(seat, None)
        if before is not None:  # the seat's previous decision, completed by its own next view
            self._store(before, row.obs, float(np.asarray(row.rew).sum()) if closing else 0.0, closing)
        if not closing:
            pending[seat] = copy.deepcopy(row)  # the collector's arrays are not ours to keep
        if bool(row.terminated) or bool(row.truncated):  # the game is over: what is left ends here
            for left in pending.values():
                self._store(left, left.obs, 0.0, True)
            pending.clear()

    def _store(self, row: Batch, obs_next: Batch, later: float, done: bool) -> None:
        """``row`` (a decision) with ``obs_next``; ``later``: reward delivered to this seat
        after it (on its closing step)."""
        rew = np.asarray(row.rew, dtype=float).copy()
        rew[int(str(row.obs.agent_id) == AGENTS[1])] += later
        self.learn.add(
            Batch(
                obs=row.obs,
                act=row.act,
                rew=rew,
                terminated=done,
                truncated=False,
                obs_next=obs_next,
                info=row.info,
            )
        )
