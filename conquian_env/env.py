"""Conquian as a two-agent PettingZoo AEC environment.

=====================  ==========================================================
Creation               ``conquian_env.env()`` or ``pettingzoo.make("aec", "Conquian-v0")``;
                       ``conquian_env.parallel_env()`` or ``pettingzoo.make("parallel",
                       "Conquian-v0")``: the same game as a ``ParallelEnv``
Agents                 ``["player_0", "player_1"]``; ``player_0`` plays first unless
                       ``reset(options={"first": 1})``
Actions                ``Discrete(85)`` (table in :mod:`conquian_env.actions`)
Observation            ``Dict(observation=Box(0, 1, (OBS_SIZE,), int8), action_mask=Box(0, 1, (85,), int8))``
Observation layout     table in :mod:`conquian_env.observation`; the pieces (and ``OBS_SIZE``)
                       are declared in :data:`conquian_env.layout.OBSERVATION`
State                  ``state()``: ``Box(0, 20, (497,), int8)``, full information
Rewards                winner +1, loser -1, draw 0 for both
=====================  ==========================================================

Options of ``env()`` / ``raw_env()``:

* ``render_mode``: ``"ansi"`` (``render()`` returns the table as a string), ``"human"``
  (prints it) or ``None``.
* ``rules``: the :class:`~conquian_env.rules.Rules` of the games (default the standard game);
  any of its fields works as a keyword shortcut (docs/environment.md, "Rule variants").
* ``illegal_action``: ``"penalize"`` (default, PettingZoo classic convention: the
  offender loses the game with -1, the opponent gets +1, a warning is issued and
  ``infos[agent]["illegal_action"]`` is set) or ``"raise"`` (``IllegalActionError``
  naming the action and the legal ones; the game is left unchanged).

A value that is not an action id at all (not an integer in 0..84) always raises
``ValueError``.  ``reset(seed=..., options=...)`` options: ``hands`` (two lists of ten
cards) and ``stock`` (twenty cards, top first) for a stacked deal, ``first`` (0 or 1).

The engine state is ``env.unwrapped.game`` (a :class:`~conquian_env.game.GameState`):
clone it, ask it for legal actions or ``determinize`` it for search.  ``state()`` and
``game`` hold both hands and the stock order: they are for centralised critics,
referees and oracle research, never part of an agent's observation.

When the game ends ``infos[agent]`` holds ``{"result": "win" | "loss" | "draw",
"winner": "player_0" | "player_1" | None, "moves": n}``.  With ``numeric_infos=True``
every step's ``infos[agent]`` has the same keys with int values instead (``game_over``,
``result`` +1/-1/0, ``winner`` 0/1/-1, ``moves``, ``illegal_action``), as replay buffers
that stack infos (Tianshou) require.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

from .actions import NUM_ACTIONS
from .game import GameState, IllegalActionError, new_game, warn_illegal
from .observation import OBS_SIZE, STATE_SIZE, action_mask, encode, encode_state
from .render import render_text
from .rules import Rules, resolve

AGENTS = ("player_0", "player_1")
_ILLEGAL_MODES = ("penalize", "raise")
_RESET_OPTIONS = ("hands", "stock", "first")
#: the option PettingZoo's ``api_test`` and ``parallel_api_test`` pass to check that reset takes
#: options: accepted without a warning (any other unknown option still warns)
_PETTINGZOO_TEST_OPTION = ("options", 1)


def check_last_caller(observe: Any) -> None:
    """Refuse ``tianshou.env.PettingZooEnv``, which calls ``last(self)``: it would credit each
    game's result to the seat that made the last move only, silently (the other seat's
    transitions would all sum to 0); ``conquian_env.integrations.tianshou`` does it right."""
    if type(observe).__module__.split(".")[0] == "tianshou":
        raise TypeError(
            "tianshou.env.PettingZooEnv(conquian_env.env()) would credit each game's result to the seat that "
            "made the last move only (the other seat never sees its result): use "
            "conquian_env.integrations.tianshou.ConquianTianshouEnv() in its place, and its SeatReplayBuffer "
            "for each seat's own next observation (help(conquian_env.integrations.tianshou), or the documentation's "
            "page Integrations > Tianshou)"
        )


#: the module of RLlib's PettingZoo wrapper (ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv)
RLLIB_PETTINGZOO_MODULE = "ray.rllib.env.wrappers.pettingzoo_env"


def check_reset_caller(depth: int = 6) -> None:
    """Refuse RLlib's ``PettingZooEnv`` (it resets the env it wraps on construction): RLlib
    has no encoder for the Dict observation (``build_algo()`` fails), and flattened, its
    policy ignores the action mask (every game is forfeited by an illegal first move);
    ``conquian_env.integrations.rllib`` is the supported path.  Looks ``depth`` frames up."""
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return
        if frame.f_globals.get("__name__") == RLLIB_PETTINGZOO_MODULE:
            raise TypeError(
                "ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv(conquian_env.env()) cannot train Conquian: "
                "RLlib has no default encoder for its Dict observation, and with FlattenObservations its policy "
                "ignores the action mask (RLlib's action-masking module reads the key 'observations'; PettingZoo's "
                "is 'observation'), so illegal moves end the games. Use conquian_env.integrations.rllib: "
                "ConquianMultiAgentEnv, or conquian_train.rllib.ppo_config() for the whole self-play PPOConfig "
                "(help(conquian_env.integrations.rllib), or the documentation's page Integrations > RLlib)"
            )
        frame = frame.f_back


class ConquianOrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order-enforcing wrapper; ``last`` refuses Tianshou's own wrapper
    (:func:`check_last_caller`)."""

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        check_last_caller(observe)
        return super().last(observe)


def env(**kwargs: Any) -> AECEnv:
    """The environment wrapped PettingZoo-classic style (order enforcing)."""
    return ConquianOrderEnforcingWrapper(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The same game as a PettingZoo ``ParallelEnv`` (PettingZoo's turn-based conversion).

    Every step takes an action for each live agent, but only the action of the agent to move
    is played (the other's is not used: pass anything in its action space, e.g. 0); every
    step observes both agents, and the one not to move has an all-zero mask.  A Conquian
    turn is several decisions, so the same agent is often to move several steps in a row:
    read ``observations[agent]["action_mask"]`` to see who is.  Takes the options of
    :func:`env`.
    """
    return turn_based_aec_to_parallel(env(**kwargs))


class raw_env(AECEnv, EzPickle):  # noqa: N801 (PettingZoo naming convention)
    """Conquian AEC environment without wrappers.  See the module docstring."""

    #: every render mode declared here works on a plain ``pip install conquian-env`` (rgb_array:
    #: Pillow, a dependency), so PettingZoo's ``render_test`` passes there
    metadata = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "conquian_v0",
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        rules: Rules | None = None,
        illegal_action: str = "penalize",
        numeric_infos: bool = False,
        **rule_fields: bool,
    ):
        rules = resolve(rules, **rule_fields)
        EzPickle.__init__(
            self, render_mode=render_mode, rules=rules, illegal_action=illegal_action, numeric_infos=numeric_infos
        )
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if illegal_action not in _ILLEGAL_MODES:
            raise ValueError(f"illegal_action must be one of {_ILLEGAL_MODES}, got {illegal_action!r}")
        if not isinstance(numeric_infos, (bool, np.bool_)):
            raise ValueError(f"numeric_infos must be True or False, got {numeric_infos!r}")
        self.numeric_infos = bool(numeric_infos)
        self.render_mode = render_mode
        self.rules = rules
        self.illegal_action = illegal_action
        self.possible_agents = list(AGENTS)
        self.agents = []
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 1, (OBS_SIZE,), np.int8),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self.state_space = spaces.Box(0, 20, (STATE_SIZE,), np.int8)
        self._np_random: np.random.Generator | None = None
        self.game: GameState | None = None

    # ----------------------------------------------------------------- copies
    # EzPickle alone would rebuild a fresh, never-reset env from the constructor arguments:
    # a copy or a pickle of an env in mid-game must carry the game (and its generator).
    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    # ----------------------------------------------------------------- spaces
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[_check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[_check_agent(agent)]

    # ----------------------------------------------------------------- API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        check_reset_caller()
        if options is None:
            options = {}
        elif not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict (keys {list(_RESET_OPTIONS)}) or None, got {options!r}")
        unknown = sorted(set(options) - set(_RESET_OPTIONS))
        key, value = _PETTINGZOO_TEST_OPTION
        if key in unknown and type(options[key]) is int and options[key] == value:
            unknown.remove(key)
        if unknown:
            # a warning, not an error: generic tools (pettingzoo's api_test) pass their own options
            warnings.warn(f"reset() ignores unknown option(s) {unknown}; known: {list(_RESET_OPTIONS)}", stacklevel=2)
        # a failed reset leaves everything as it was: the generator is replaced only on success
        rng = np.random.default_rng(seed) if seed is not None or self._np_random is None else self._np_random
        first = options.get("first", 0)
        hands, stock = options.get("hands"), options.get("stock")
        if hands is not None or stock is not None:  # a stacked deal ({"hands": None} is no deal)
            game = new_game(hands=hands, stock=stock, first=first, rules=self.rules)
        else:
            game = new_game(rng, first=first, rules=self.rules)
        self._np_random = rng
        self.game = game
        self.agents = list(AGENTS)
        self.rewards = {a: 0 for a in AGENTS}
        self._cumulative_rewards = {a: 0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self.infos = {a: self._numeric_info(a) if self.numeric_infos else {} for a in AGENTS}
        self.agent_selection = AGENTS[self.game.player]

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        check_last_caller(observe)  # Tianshou's PettingZooEnv: refused with the fix
        return super().last(observe)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self._require_game("observe")
        p = _AGENT_INDEX.get(agent)
        if p is None:
            _check_agent(agent)
        return {"observation": encode(game, p), "action_mask": action_mask(game, p)}

    def step(self, action: Any) -> None:
        self._require_game("step")  # before reset() there is no agent to move
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return
        game = self._require_game("step")
        if game.is_terminal():  # every agent has left: nothing may change the result now
            raise RuntimeError("the game is over and every agent has left: call reset() to play again")
        try:
            a = game.check_action(action)  # not an action id at all (80.7, True, 85): ValueError
        except IllegalActionError as err:
            if self.illegal_action == "raise":
                raise
            self._cumulative_rewards[agent] = 0
            warn_illegal(f"{agent}: {err}. The game ends and {agent} loses.")
            loser = _AGENT_INDEX[agent]
            game.forfeit(loser)  # the final observation shows the game over, with empty masks
            self._finish(winner=1 - loser, illegal=agent)
        else:
            self._cumulative_rewards[agent] = 0
            game.apply(a)
            if game.is_terminal():
                self._finish(winner=game.winner)
            else:
                self.agent_selection = AGENTS[game.player]
                if self.numeric_infos:
                    for p_agent in AGENTS:
                        self.infos[p_agent] = self._numeric_info(p_agent)
        if self.render_mode == "human":
            self.render()

    def _finish(self, winner: int, illegal: str | None = None) -> None:
        game = self.game
        assert game is not None
        for p, a in enumerate(AGENTS):
            if winner < 0:
                self.rewards[a] = 0
                result = "draw"
            else:
                self.rewards[a] = 1 if p == winner else -1
                result = "win" if p == winner else "loss"
            info = {"result": result, "winner": AGENTS[winner] if winner >= 0 else None, "moves": game.move_count}
            if illegal is not None:
                info["illegal_action"] = illegal == a
            self.infos[a] = self._numeric_info(a, illegal) if self.numeric_infos else info
            self.terminations[a] = True
        self._accumulate_rewards()

    def _numeric_info(self, agent: str, illegal: str | None = None) -> dict[str, int]:
        """The same keys with int values on every step (``numeric_infos=True``): replay
        buffers that stack infos (Tianshou) need that.  ``result``: +1 win, -1 loss, 0 draw
        or not over; ``winner``: 0, 1 or -1 (none)."""
        game = self.game
        assert game is not None
        p = _AGENT_INDEX[agent]
        over = game.is_terminal()
        return {
            "game_over": int(over),
            "result": (0 if game.winner < 0 else (1 if game.winner == p else -1)) if over else 0,
            "winner": game.winner if over else -1,
            "moves": game.move_count,
            "illegal_action": int(illegal == agent),
        }

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            warnings.warn("render() called with render_mode=None; pass render_mode='ansi' or 'human'", stacklevel=2)
            return None
        if self.render_mode == "rgb_array":
            from .image import render_rgb  # Pillow (a dependency)

            return render_rgb(self._require_game("render"), AGENTS)
        text = render_text(self._require_game("render"), AGENTS)
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def state(self) -> np.ndarray:
        """Full-information vector (both hands, stock order): not for agents' policies."""
        return encode_state(self._require_game("state"))

    def close(self) -> None:
        pass

    # ----------------------------------------------------------------- helpers
    def legal_actions(self) -> list[int]:
        """Legal action ids of the agent to move (empty when the game is over)."""
        return self._require_game("legal_actions").legal_actions()

    def _require_game(self, what: str) -> GameState:
        if self.game is None:
            raise RuntimeError(f"call reset() before {what}()")
        return self.game


_AGENT_INDEX = {a: i for i, a in enumerate(AGENTS)}


def _check_agent(agent: Any) -> str:
    if agent not in _AGENT_INDEX:
        raise KeyError(f"unknown agent {agent!r}; the agents are {list(AGENTS)}")
    return agent
