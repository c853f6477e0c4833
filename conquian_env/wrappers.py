"""Gymnasium single-agent adapter: one seat of Conquian against a fixed opponent.

Stable-Baselines3 trains single-agent Gymnasium environments; sb3-contrib's MaskablePPO
reads legal actions from an ``action_masks()`` method.  :class:`SingleAgentEnv` gives
both::

    import torch
    from sb3_contrib import MaskablePPO
    from conquian_env.wrappers import SingleAgentEnv
    torch.set_num_threads(1)  # torch's default threads fight the game for the cores: many times slower
    env = SingleAgentEnv(opponent="random")        # or any bot object / callable
    model = MaskablePPO("MlpPolicy", env).learn(10_000)

* observation: the agent's ``observation`` vector (``Box(0, 1, (OBS_SIZE,), int8)``, the
  pieces of :data:`conquian_env.layout.OBSERVATION`, table in :mod:`conquian_env.observation`);
  the mask comes from :meth:`SingleAgentEnv.action_masks` and is also in ``info["action_mask"]``.
* action: ``Discrete(85)``.  ``illegal_action="penalize"`` (default, as in the AEC
  environment): an illegal action ends the episode with reward -1 and a warning;
  ``"raise"``: ``IllegalActionError``.
* reward: +1 win, -1 loss, 0 draw, at the end of the game only.
* the mask of a finished game allows one action, :data:`GAME_OVER_ACTION`, and nothing is
  played with it: ``step`` raises until ``reset``.  Gymnasium 1.x's vector envs
  (``gymnasium.make_vec(..., vectorization_mode="sync" | "async")``, next-step autoreset)
  take one more action from a finished env, on the step that resets it, and ignore it; an
  all-false mask there would leave masked sampling nothing to draw.
* ``seat``: 0 (plays first), 1, or ``None`` (default: drawn at random each episode).
* ``reset(seed=..., options={"hands": [[10 cards], [10 cards]], "stock": [20 cards]})``:
  a stacked deal (as in the AEC environment; player 0 plays first).
* a deal can end before the learner's first decision (seat 1: the opponent goes out with
  the first card it is offered).  ``reset`` never returns such a game: it deals anew (a
  shuffle from the env's generator, drawing the seat again) until the learner has a move,
  and lists the results of the deals it skipped for the learner (``"loss"`` in practice)
  in ``info["unplayed_results"]``; they are not episodes (the learner decided nothing).
* ``opponent``: an object with ``act(observation, action_mask, view)`` (and optionally
  ``reset(player, seed)``), e.g. any :class:`agents.base.Agent`; a callable with the same
  arguments; or a bot spec string such as ``"greedy"``, built by the resolver the installed
  bots register (:func:`conquian_env.plugins.make_opponent`).
  The opponent sees only its own view.
* ``render_mode``: ``"ansi"``, ``"human"`` or ``"rgb_array"``, each the agent's view from its
  seat (the opponent's hand as its size, or as card backs); :meth:`SingleAgentEnv.render_referee`
  is the referee's table with both hands, a separate call that no render mode makes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from .actions import NUM_ACTIONS
from .game import GameState, IllegalActionError, new_game, warn_illegal
from .observation import OBS_SIZE, action_mask, encode
from .plugins import make_opponent
from .render import render_text
from .rules import Rules, resolve
from .view import PlayerView

_RESET_OPTIONS = ("hands", "stock")

#: the one action the mask of a finished game allows (see the module docstring): Gymnasium's
#: next-step autoreset ignores the action it passes a finished env
GAME_OVER_ACTION = 0


def game_over_mask() -> np.ndarray:
    """The mask of a finished game: :data:`GAME_OVER_ACTION` alone (int8, as ``action_mask``)."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[GAME_OVER_ACTION] = 1
    return mask


class SingleAgentEnv(gymnasium.Env):
    """One player's side of Conquian; the other seat is played by ``opponent``."""

    metadata = {"render_modes": ["ansi", "human", "rgb_array"], "render_fps": 2}

    def __init__(
        self,
        opponent: Any = "random",
        seat: int | None = None,
        rules: Rules | None = None,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        **rule_fields: bool,
    ):
        if illegal_action not in ("penalize", "raise"):
            raise ValueError(f"illegal_action must be 'penalize' or 'raise', got {illegal_action!r}")
        self.illegal_action = illegal_action
        if seat not in (None, 0, 1):
            raise ValueError(f"seat must be 0, 1 or None (random each episode), got {seat!r}")
        if render_mode not in (None, "ansi", "human", "rgb_array"):
            raise ValueError(f"render_mode must be 'ansi', 'human', 'rgb_array' or None, got {render_mode!r}")
        if isinstance(opponent, str):
            opponent = make_opponent(opponent)  # by the installed bots' resolver (conquian_env.plugins)
        if not (hasattr(opponent, "act") or callable(opponent)):
            raise ValueError(
                f"opponent must be a bot with act(observation, action_mask, view) or a callable, got {opponent!r}"
            )
        rules = resolve(rules, **rule_fields)
        self.opponent = opponent
        self.fixed_seat = seat
        self.rules = rules
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 1, (OBS_SIZE,), np.int8)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.game: GameState | None = None
        self.seat = 0

    def set_opponent(self, opponent: Any) -> None:
        """Swap the opponent (self-play: a snapshot of the learner) from the next move on."""
        self.opponent = opponent

    def _opponent_act(self) -> None:
        game = self.game
        assert game is not None
        other = 1 - self.seat
        while not game.is_terminal() and game.player == other:
            obs, mask = encode(game, other), action_mask(game, other)
            view = PlayerView(game, other)
            act = getattr(self.opponent, "act", None)
            answer = act(obs, mask, view) if act is not None else self.opponent(obs, mask, view)
            try:
                action = game.check_action(answer)
            except ValueError as err:  # the opponent's fault, not the learner's: say so
                raise RuntimeError(f"the opponent {self.opponent!r} answered {answer!r}: {err}") from err
            game.apply(action)

    def _result(self) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        game = self.game
        assert game is not None
        done = game.is_terminal()
        reward = float(game.returns()[self.seat]) if done else 0.0
        mask = game_over_mask() if done else action_mask(game, self.seat)
        info: dict[str, Any] = {"action_mask": mask, "seat": self.seat}
        if done:
            info["result"] = "draw" if game.winner < 0 else ("win" if game.winner == self.seat else "loss")
        return encode(game, self.seat), reward, done, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if options is None:
            options = {}
        elif not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict (keys {list(_RESET_OPTIONS)}) or None, got {options!r}")
        unknown = sorted(set(options) - set(_RESET_OPTIONS))
        if unknown:  # a warning, not an error, as in the AEC env: generic tools pass their own options
            warnings.warn(f"reset() ignores unknown option(s) {unknown}; known: {list(_RESET_OPTIONS)}", stacklevel=2)
        hands, stock = options.get("hands"), options.get("stock")
        stacked = None
        if hands is not None or stock is not None:
            stacked = new_game(hands=hands, stock=stock, rules=self.rules)  # checked before anything changes
        super().reset(seed=seed)
        rng = self.np_random
        unplayed: list[str] = []
        while True:
            self.seat = self.fixed_seat if self.fixed_seat is not None else int(rng.integers(2))
            self.game = stacked if stacked is not None else new_game(rng, rules=self.rules)
            stacked = None
            reset_opponent = getattr(self.opponent, "reset", None)
            if reset_opponent is not None:
                reset_opponent(1 - self.seat, int(rng.integers(2**31)))
            self._opponent_act()
            if not self.game.is_terminal():
                break
            # the opponent went out before the learner's first decision: no episode, deal anew
            unplayed.append(self._result()[3]["result"])
        obs, _, _, info = self._result()
        if unplayed:
            info["unplayed_results"] = unplayed
        return obs, info

    def step(self, action: Any):
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        if self.game.is_terminal():
            raise RuntimeError("the game is over: call reset()")
        try:
            a = self.game.check_action(action)  # 80.9, True, -1 or 85 is a ValueError, as in the AEC env
        except IllegalActionError as err:
            if self.illegal_action == "raise":
                raise
            warn_illegal(f"{err}. The episode ends with reward -1.")
            self.game.forfeit(self.seat)  # the offender loses: the game stops here
            obs, _, _, info = self._result()
            info["illegal_action"] = True
            return obs, -1.0, True, False, info
        self.game.apply(a)
        self._opponent_act()
        obs, reward, done, info = self._result()
        if self.render_mode == "human":
            print(self.render_text() + "\n")
        return obs, reward, done, False, info

    def action_masks(self) -> np.ndarray:
        """Boolean legal-action mask for MaskablePPO (a finished game's: :func:`game_over_mask`)."""
        if self.game is None:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        if self.game.is_terminal():
            return game_over_mask().astype(bool)
        return action_mask(self.game, self.seat).astype(bool)

    def _names(self) -> tuple[str, str]:
        return ("agent", "opponent") if self.seat == 0 else ("opponent", "agent")

    def _require_game(self, what: str) -> GameState:
        if self.game is None:
            raise RuntimeError(f"call reset() before {what}()")
        return self.game

    def render_text(self) -> str:
        """The table as the agent sees it from its seat: the opponent's hand as its size alone."""
        return render_text(self._require_game("render_text"), self._names(), observer=self.seat)

    def render_referee(self) -> str:
        """The referee's table: both hands shown (for debugging and replays; never what the agent sees)."""
        return render_text(self._require_game("render_referee"), self._names())

    def render(self) -> str | np.ndarray | None:
        """The agent's view from its seat in every mode (``rgb_array``: the opponent's hand as card
        backs; ``ansi`` and ``human``: as its size); the referee's view is :meth:`render_referee`."""
        if self.render_mode == "rgb_array":
            from .image import render_rgb  # Pillow, the 'render' extra

            return render_rgb(self._require_game("render"), self._names(), observer=self.seat)
        if self.render_mode == "ansi":
            return self.render_text()
        if self.render_mode == "human":
            print(self.render_text())
        return None
