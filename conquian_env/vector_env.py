"""Vector environments over the batched engine: one learning seat per game against
opponents that are evaluated in batch.

::

    from conquian_env.vector_env import ConquianVectorEnv
    envs = ConquianVectorEnv(1024, opponent="greedy", seed=0)     # gymnasium.vector.VectorEnv
    obs, infos = envs.reset()
    obs, rewards, terminated, truncated, infos = envs.step(actions)   # actions: (1024,) ints
    envs.action_masks()                                             # (1024, 85) bool
    envs = gymnasium.make_vec("conquian_env/Conquian-v0", 1024, opponent="greedy", seed=0)   # the same

For Stable-Baselines3 (MaskablePPO): :class:`conquian_env.sb3.ConquianVecEnv` is the same
thing as an SB3 ``VecEnv``.

In every game the learner plays one seat (``seat=0``, ``1``, or ``None``: drawn at random
for each new deal); all of the other seat's moves are played between two learner
decisions, batched across the games where it is the opponent's turn, so the learner only
ever sees its own decisions.  When a game ends its reward (+1 / -1 / 0 for the learner)
comes with ``terminated=True`` and the returned observation is already that of a new deal
(Gymnasium's same-step autoreset: the last observation and info of the old game are in
``infos["final_obs"]`` and ``infos["final_info"]``).  The infos follow Gymnasium's
``SyncVectorEnv`` over the single-agent env (:class:`~conquian_env.wrappers.SingleAgentEnv`)
in that mode key for key: ``action_mask`` (int8, ``(n, 85)``) and ``seat`` of every game;
``final_info`` holds the finished games' ``action_mask`` (a finished game's,
:func:`~conquian_env.wrappers.game_over_mask`), ``seat``, ``result`` (``"win"`` /
``"loss"`` / ``"draw"``) and ``illegal_action``; each key ``k`` comes with its
mask ``_k``.  A new deal can end before the learner's first decision (the
opponent, first to play, goes out with the first card it is offered): the learner has
nothing to decide in it, so that deal is not an episode: it is dealt anew at once (until
the learner has a move) and its result for the learner (``"loss"`` in practice) is
reported in ``infos["unplayed_results"]`` (a list per game, with
``infos["_unplayed_results"]``) of the ``reset`` or ``step`` that dealt it;
:attr:`SeatGames.unplayed_deals` counts them.  Illegal learner actions end that game with
reward -1 and ``infos["final_info"]["illegal_action"]`` (``illegal_action="penalize"``, the
default), or raise.  ``call`` / ``get_attr`` / ``set_attr`` answer per game as
``SyncVectorEnv``'s do; Gymnasium's vector wrappers pass no methods on, so through a
wrapper the masks are ``infos["action_mask"]`` or ``envs.unwrapped.call("action_masks")``.

**Opponents** are batched bots: any object with ``act_batch(games, rows) -> actions``
(``games`` the :class:`~conquian_env.vector.VectorGame`, ``rows`` the games where the
opponent is to move; it must read only the mover's information: use
``games.observe_rows(rows)``) and optionally ``reset_rows(rows)`` (new deals in those
rows).  A bot spec string (``"random"``, ``"greedy"``, ``"ppo"``, ``"ppo:PATH"``, or any
other spec of :func:`agents.make_agent`, played game by game) is built by
:func:`agents.batched.make_batch_opponent`.  :meth:`ConquianVectorEnv.set_opponent` swaps
it (self-play: a snapshot of the learner).

**Observations**: the raw observation vector (``"raw"``, int8 ``(OBS_SIZE,)``, the pieces of
:data:`conquian_env.layout.OBSERVATION`, as in the AEC env)
or any encoder object with a ``space`` and ``__call__(games, rows, players) -> array``,
such as :data:`agents.batched.MELD_FEATURES` (the ``"meld"`` features of
:data:`conquian_env.layout.MELD_FEATURES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from .extras import missing

try:
    from . import kernels as K
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "conquian_env.vector_env (the batched Gymnasium env)") from None
from .actions import NUM_ACTIONS
from .observation import OBS_SIZE
from .rules import Rules, resolve
from .seeding import VECTOR_OPPONENT, derive_seed
from .vector import VectorGame, check_seed, deal_permutation
from .wrappers import game_over_mask


class RawObservation:
    """The environment's own observation vector (``conquian_env.observation``)."""

    name = "raw"
    space = spaces.Box(0, 1, (OBS_SIZE,), np.int8)

    def __call__(self, games: VectorGame, rows: np.ndarray, players: np.ndarray) -> np.ndarray:
        obs, _ = games.observe_rows(rows, players)
        assert obs is not None
        return obs


def _derived_seed(seed: int | None, *words: int) -> int | None:
    """The project's one seed derivation (:func:`conquian_env.seeding.derive_seed`), None for no seed."""
    return None if seed is None else derive_seed(seed, *words)


def _resolve_opponent(opponent: Any, seed: int | None = None) -> Any:
    if isinstance(opponent, str):
        from .plugins import make_batch_opponent  # the bots live outside the environment package

        return make_batch_opponent(opponent, seed)
    if not hasattr(opponent, "act_batch"):
        raise ValueError(
            f"opponent must be a bot spec string (e.g. 'random', 'greedy') or a batched bot with "
            f"act_batch(games, rows), got {opponent!r}; wrap a per-game bot with "
            "agents.batched.PerGameOpponent"
        )
    return opponent


def _resolve_encoder(observation: Any) -> Any:
    if observation is None or observation == "raw":
        return RawObservation()
    if isinstance(observation, str):
        if observation == "potential":
            from .potential import POTENTIAL_OBSERVATION

            return POTENTIAL_OBSERVATION
        if observation == "meld":
            from .plugins import observation_encoder

            return observation_encoder("meld")
        raise ValueError(f"observation must be 'raw', 'potential', 'meld' or an encoder object, got {observation!r}")
    if not (callable(observation) and isinstance(getattr(observation, "space", None), spaces.Box)):
        raise ValueError(
            f"an observation encoder needs a Box 'space' and __call__(games, rows, players), got {observation!r}"
        )
    return observation


class SeatGames:
    """The engine of the vector environments: ``num_envs`` games, the learner in one seat of each."""

    def __init__(
        self,
        num_envs: int,
        opponent: Any = "random",
        *,
        seat: int | None = None,
        rules: Rules | None = None,
        observation: Any = "raw",
        illegal_action: str = "penalize",
        seed: int | None = None,
        parallel: bool | None = None,
        **rule_fields: bool,
    ):
        if seat not in (None, 0, 1) or isinstance(seat, (bool, np.bool_)):
            raise ValueError(f"seat must be 0, 1 or None (drawn at random for each deal), got {seat!r}")
        if illegal_action not in ("penalize", "raise"):
            raise ValueError(f"illegal_action must be 'penalize' or 'raise', got {illegal_action!r}")
        seed = check_seed(seed)
        self._opponent_seed = _derived_seed(seed, VECTOR_OPPONENT)
        self.opponent = _resolve_opponent(opponent, self._opponent_seed)
        self.encoder = _resolve_encoder(observation)
        self.fixed_seat = seat
        self.illegal_action = illegal_action
        rules = resolve(rules, **rule_fields)
        self.games = VectorGame(
            num_envs, seed, rules=rules, illegal_action="penalize", observations=False, parallel=parallel
        )
        self.num_envs = self.games.num_games
        self.seats = np.zeros(self.num_envs, dtype=np.int64)
        self._seat_rng = np.random.default_rng(self.games.rng.integers(2**63))
        self.opponent_decisions = 0
        #: deals that ended before the learner's first decision (dealt anew, never handed over)
        self.unplayed_deals = 0
        # the learner made a decision in the current deal of each row
        self._learner_moved = np.zeros(self.num_envs, dtype=bool)

    def set_opponent(self, opponent: Any) -> None:
        self.opponent = _resolve_opponent(opponent, self._opponent_seed)
        reset_rows = getattr(self.opponent, "reset_rows", None)
        if reset_rows is not None:
            reset_rows(np.arange(self.num_envs))

    def _new_deals(self, rows: np.ndarray) -> None:
        self._learner_moved[rows] = False
        if self.fixed_seat is None:
            self.seats[rows] = self._seat_rng.integers(2, size=len(rows))
        else:
            self.seats[rows] = self.fixed_seat
        reset_rows = getattr(self.opponent, "reset_rows", None)
        if reset_rows is not None:
            reset_rows(rows)

    def reset(
        self, seed: int | None = None, deal: tuple[Any, Any] | None = None
    ) -> tuple[np.ndarray, dict[int, list[int]]]:
        """New deals in every game; with ``seed`` the deals, the seats and the opponent's own
        random numbers (its ``reseed(seed)``, when it has one) start afresh from it, so the
        same seed and the same learner actions give the same games (an opponent whose spec
        gave its own seed, ``random:seed=5``, restarts from that one).  ``deal``: a stacked
        deal ``(hands, stock)``, as ``new_game(hands=..., stock=...)`` takes it, dealt in
        every game instead of shuffles (the deals after it are shuffled as usual).

        Returns the learner's observations and the results (+1 / -1 / 0 for the learner) of
        the deals that ended before the learner's first decision, by row (those rows were
        dealt anew)."""
        seed = check_seed(seed)
        perms = None
        if deal is not None:  # checked before anything changes
            perms = np.tile(deal_permutation(*deal), (self.num_envs, 1))
        if seed is not None:
            self.games.reseed(seed)
            self._seat_rng = np.random.default_rng(self.games.rng.integers(2**63))
            self._opponent_seed = _derived_seed(seed, VECTOR_OPPONENT)
            reseed = getattr(self.opponent, "reseed", None)
            if reseed is not None:
                reseed(self._opponent_seed)
        if perms is None:
            self.games.redeal(np.arange(self.num_envs))
        else:
            self.games.reset(deals=perms)
        self._new_deals(np.arange(self.num_envs))
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        unplayed: dict[int, list[int]] = {}
        self._play_opponents(rewards, dones, None, unplayed)
        return self.observations(), unplayed

    def observations(self) -> np.ndarray:
        return self.encoder(self.games, np.arange(self.num_envs, dtype=np.int64), self.seats)

    def action_masks(self) -> np.ndarray:
        _, masks = self.games.observe_rows(None, self.seats, masks_only=True)
        return masks.astype(bool)

    def _finish(
        self,
        rewards: np.ndarray,
        dones: np.ndarray,
        final: dict[int, np.ndarray] | None,
        unplayed: dict[int, list[int]],
    ) -> None:
        """Record the result of the games that just ended and deal them anew.

        A game the learner made a decision in is the step's episode (``rewards``, ``dones``,
        ``final``); one that ended before the learner's first decision is no episode of the
        learner's: its result goes to ``unplayed``."""
        state = self.games.state
        over = np.flatnonzero(state[:, K.PHASE] == K.GAME_OVER)
        if not len(over):
            return
        results = np.where(state[over, K.WINNER] < 0, 0, np.where(state[over, K.WINNER] == self.seats[over], 1, -1))
        played = self._learner_moved[over]
        rows = over[played]
        # the learner decides once per step, so a row ends at most one of its episodes per step
        assert not dones[rows].any(), "a learner episode ended twice in one step"
        rewards[rows] = results[played]
        dones[rows] = True
        if final is not None and len(rows):
            obs = self.encoder(self.games, rows, self.seats[rows])
            for k, row in enumerate(rows):
                final[int(row)] = obs[k]
        for row, result in zip(over[~played].tolist(), results[~played].tolist(), strict=True):
            unplayed.setdefault(row, []).append(result)
            self.unplayed_deals += 1
        self.games.redeal(over)
        self._new_deals(over)

    def _play_opponents(
        self,
        rewards: np.ndarray,
        dones: np.ndarray,
        final: dict[int, np.ndarray] | None,
        unplayed: dict[int, list[int]],
    ) -> None:
        state = self.games.state
        while True:
            self._finish(rewards, dones, final, unplayed)
            theirs = state[:, K.PLAYER] != self.seats
            if not theirs.any():
                return
            rows = np.flatnonzero(theirs)
            answer = np.asarray(self.opponent.act_batch(self.games, rows))
            if answer.shape != (len(rows),) or not np.issubdtype(answer.dtype, np.integer):
                raise RuntimeError(
                    f"the opponent {self.opponent!r} answered {answer.dtype} {answer.shape} for {len(rows)} games; "
                    "act_batch must return one integer action per row"
                )
            wild = (answer < 0) | (answer >= NUM_ACTIONS)
            if wild.any():
                k = int(np.flatnonzero(wild)[0])
                raise RuntimeError(
                    f"the opponent {self.opponent!r} answered {int(answer[k])} in game {int(rows[k])}: "
                    f"action ids run from 0 to {NUM_ACTIONS - 1}"
                )
            acts = np.full(self.num_envs, -1, dtype=np.int64)
            acts[rows] = answer
            bad = K.check_actions(state, acts)
            if bad >= 0:
                err = self.games.illegal_error(bad, int(acts[bad]))
                raise RuntimeError(f"the opponent {self.opponent!r} answered {int(acts[bad])} in {err}")
            self.opponent_decisions += len(rows)
            self.games.step(acts, theirs, autoreset=False, observe=False)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[int, np.ndarray], dict[int, list[int]]]:
        """Learner actions for every game -> (observations, rewards, dones, illegal, final
        observations, unplayed results: see :meth:`reset`)."""
        a = np.asarray(actions)
        if a.shape != (self.num_envs,) or not np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_:
            raise ValueError(
                f"actions must be {self.num_envs} integer action ids (one per game, 0..{NUM_ACTIONS - 1}), "
                f"got {a.dtype} {a.shape}"
            )
        if ((a < 0) | (a >= NUM_ACTIONS)).any():  # in the given dtype: uint64 must not wrap
            row = int(np.flatnonzero((a < 0) | (a >= NUM_ACTIONS))[0])
            raise ValueError(f"action ids run from 0 to {NUM_ACTIONS - 1}, got {int(a[row])} in game {row}")
        a = a.astype(np.int64)
        if self.illegal_action == "raise":
            bad = K.check_actions(self.games.state, a)
            if bad >= 0:
                raise self.games.illegal_error(bad, int(a[bad]))
        result = self.games.step(a, autoreset=False, observe=False)
        self._learner_moved[:] = True
        rewards = np.zeros(self.num_envs, dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        final: dict[int, np.ndarray] = {}
        unplayed: dict[int, list[int]] = {}
        self._play_opponents(rewards, dones, final, unplayed)
        return self.observations(), rewards, dones, result.illegal, final, unplayed


#: a learner's result as the single-agent env's ``info["result"]`` names it
_RESULT_NAMES = {1: "win", -1: "loss", 0: "draw"}
_RESET_OPTIONS = ("hands", "stock")
#: what :meth:`ConquianVectorEnv.call` answers with one value per game, beside ``action_masks``
#: and ``set_opponent``: the learner's seat and game, and the settings every game shares
_PER_GAME = ("seat", "game")
_SHARED = (
    "opponent",
    "fixed_seat",
    "rules",
    "illegal_action",
    "render_mode",
    "observation_space",
    "action_space",
)


class ConquianVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` Conquian games, one learning seat each (see the module docstring).

    Arguments: ``opponent`` (bot spec or batched bot), ``seat`` (0, 1 or None = random per
    deal), ``rules`` (:class:`~conquian_env.rules.Rules`; its fields work as keyword
    shortcuts), ``observation`` ("raw", "meld" or an encoder),
    ``illegal_action`` ("penalize" or "raise"), ``seed``, ``parallel`` (kernels on all
    cores; default from 256 games); ``render_mode`` (None only: it does not render) and
    ``autoreset_mode`` (``AutoresetMode.SAME_STEP`` only) are there for ``gymnasium.make_vec``.

    Its infos are those of gymnasium's ``SyncVectorEnv`` over
    :class:`~conquian_env.wrappers.SingleAgentEnv` in same-step autoreset mode (keys,
    dtypes, shapes and ``_key`` masks): ``action_mask`` (int8 ``(n, 85)``) and ``seat``
    of every game, ``unplayed_results`` where a deal ended before the learner's first
    decision, and where games ended ``final_obs`` and ``final_info`` (the last step's info:
    ``action_mask``, ``seat``, ``result`` ``"win"`` / ``"loss"`` / ``"draw"``, and
    ``illegal_action``), each with its mask.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponent: Any = "random",
        *,
        seat: int | None = None,
        rules: Rules | None = None,
        observation: Any = "raw",
        illegal_action: str = "penalize",
        seed: int | None = None,
        parallel: bool | None = None,
        render_mode: str | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
        **rule_fields: bool,
    ):
        if isinstance(num_envs, (bool, np.bool_)) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        if render_mode is not None:
            raise ValueError(
                f"ConquianVectorEnv does not render (render_mode must be None), got {render_mode!r}; to render, "
                "vectorize the single-agent env: gymnasium.make_vec(..., vectorization_mode='sync')"
            )
        if autoreset_mode not in (AutoresetMode.SAME_STEP, AutoresetMode.SAME_STEP.value):
            raise ValueError(
                f"ConquianVectorEnv deals a finished game anew in the same step (autoreset_mode "
                f"AutoresetMode.SAME_STEP), got {autoreset_mode!r}; for another mode vectorize the single-agent "
                "env: gymnasium.make_vec(..., vectorization_mode='sync', vector_kwargs={'autoreset_mode': ...})"
            )
        self.core = SeatGames(
            num_envs,
            opponent,
            seat=seat,
            rules=resolve(rules, **rule_fields),
            observation=observation,
            illegal_action=illegal_action,
            seed=seed,
            parallel=parallel,
        )
        self.num_envs = self.core.num_envs
        self.single_observation_space = self.core.encoder.space
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_envs, NUM_ACTIONS))
        self._started = False

    @property
    def games(self) -> VectorGame:
        return self.core.games

    def set_opponent(self, opponent: Any) -> None:
        """Swap the opponent from the next move on (e.g. a snapshot of the learner)."""
        self.core.set_opponent(opponent)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New deals in every game (see :meth:`SeatGames.reset` for ``seed``).

        ``options={"hands": [[10 cards], [10 cards]], "stock": [20 cards]}`` deals that
        stacked deal in every game (player 0 plays first), as the single-agent env's
        ``reset`` (and ``SyncVectorEnv``, which passes the options to each game) does."""
        obs, unplayed = self.core.reset(seed, self._stacked_deal(options))
        self._started = True
        return obs, self._infos(unplayed)

    @staticmethod
    def _stacked_deal(options: Any) -> tuple[Any, Any] | None:
        if options is None:
            return None
        if not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict (keys {list(_RESET_OPTIONS)}) or None, got {options!r}")
        unknown = sorted(set(options) - set(_RESET_OPTIONS), key=str)
        if unknown:
            raise ValueError(f"ConquianVectorEnv.reset takes the options {list(_RESET_OPTIONS)}, got {unknown}")
        if not options:
            return None
        if set(options) != set(_RESET_OPTIONS):
            raise ValueError("a stacked deal needs both 'hands' and 'stock'")
        return options["hands"], options["stock"]

    def _infos(self, unplayed: dict[int, list[int]]) -> dict[str, Any]:
        """The infos every reset and step returns (``SingleAgentEnv``'s info, batched)."""
        n = self.num_envs
        _, masks = self.games.observe_rows(None, self.core.seats, masks_only=True)
        infos: dict[str, Any] = {
            "action_mask": masks,
            "_action_mask": np.ones(n, dtype=bool),
            "seat": self.core.seats.copy(),
            "_seat": np.ones(n, dtype=bool),
        }
        if unplayed:
            lists = np.full(n, None, dtype=object)
            for row, results in unplayed.items():
                lists[row] = [_RESULT_NAMES[r] for r in results]
            infos["unplayed_results"] = lists
            infos["_unplayed_results"] = np.isin(np.arange(n), list(unplayed))
        return infos

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise RuntimeError("call reset() before step()")
        seats = self.core.seats.copy()  # an episode that ends in this step is in the seat it began in
        obs, rewards, dones, illegal, final, unplayed = self.core.step(actions)
        infos = self._infos(unplayed)
        if dones.any():
            n = self.num_envs
            final_obs = np.full(n, None, dtype=object)
            result = np.full(n, None, dtype=object)
            for row, last in final.items():
                final_obs[row] = last
                result[row] = _RESULT_NAMES[int(rewards[row])]
            final_info: dict[str, Any] = {
                # a finished game's mask, as SingleAgentEnv's: GAME_OVER_ACTION alone
                "action_mask": np.where(dones[:, None], game_over_mask()[None], 0).astype(np.int8),
                "_action_mask": dones.copy(),
                "seat": np.where(dones, seats, 0),
                "_seat": dones.copy(),
                "result": result,
                "_result": dones.copy(),
            }
            if illegal.any():  # an illegal action ends its game: always a row of final_info
                final_info["illegal_action"] = illegal.copy()
                final_info["_illegal_action"] = illegal.copy()
            infos["final_obs"] = final_obs
            infos["_final_obs"] = dones.copy()
            infos["final_info"] = final_info
            infos["_final_info"] = dones.copy()
        truncated = np.zeros(self.num_envs, dtype=bool)
        return obs, rewards.astype(np.float64), dones, truncated, infos

    def action_masks(self) -> np.ndarray:
        """Legal actions of the learner in every game, ``(num_envs, 85)`` bool.

        Gymnasium's vector wrappers do not pass methods on: through them use
        ``envs.unwrapped.action_masks()``, ``envs.unwrapped.call("action_masks")`` (as for a
        ``SyncVectorEnv``) or ``infos["action_mask"]``."""
        return self.core.action_masks()

    # ------------------------------------------------------ SyncVectorEnv's call / get_attr / set_attr
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """One result per game, as ``SyncVectorEnv.call`` over the single-agent env gives:
        ``"action_masks"`` (each game's ``(85,)`` bool mask), ``"set_opponent"`` (swaps the
        one opponent of every game; ``None`` per game), ``"seat"``, ``"game"`` (a
        :class:`~conquian_env.game.GameState` copy) and the settings every game shares
        (``opponent``, ``fixed_seat``, ``rules``, ``illegal_action``,
        ``render_mode``, ``observation_space``, ``action_space``: the single game's spaces)."""
        n = self.num_envs
        if name == "action_masks":
            return tuple(self.action_masks(*args, **kwargs))
        if name == "set_opponent":
            self.set_opponent(*args, **kwargs)
            return (None,) * n
        if name not in _PER_GAME + _SHARED:
            raise AttributeError(
                f"ConquianVectorEnv has no per-game attribute {name!r}; call and get_attr know "
                f"{['action_masks', 'set_opponent', *_PER_GAME, *_SHARED]}"
            )
        if args or kwargs:
            raise TypeError(f"{name!r} is an attribute, not a method: call({name!r}) takes no arguments")
        if name == "seat":
            return tuple(int(s) for s in self.core.seats)
        if name == "game":
            return tuple(self.games.get_game(i) for i in range(n))
        shared = {
            "opponent": self.core.opponent,
            "fixed_seat": self.core.fixed_seat,
            "rules": self.games.rules,
            "illegal_action": self.core.illegal_action,
            "render_mode": self.render_mode,
            "observation_space": self.single_observation_space,
            "action_space": self.single_action_space,
        }
        return (shared[name],) * n

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Each game's ``name`` (as :meth:`call`, which ``SyncVectorEnv.get_attr`` also is)."""
        return self.call(name)

    def set_attr(self, name: str, values: Any) -> None:
        """``set_attr("opponent", bot)``: :meth:`set_opponent` (one opponent serves every game,
        so a list or tuple must hold the same one for each game); nothing else is settable."""
        if name != "opponent":
            raise AttributeError(
                f"ConquianVectorEnv can set only 'opponent' (one opponent serves every game), got {name!r}"
            )
        if isinstance(values, (list, tuple)):
            if len(values) != self.num_envs:
                raise ValueError(
                    f"values must be one opponent, or a list or tuple of {self.num_envs} (one per game), "
                    f"got {len(values)} values"
                )
            first = values[0]
            if not all(v is first or (isinstance(v, str) and v == first) for v in values):
                raise ValueError("one opponent serves every game of a ConquianVectorEnv: give the same one for each")
            values = first
        self.set_opponent(values)

    def close_extras(self, **kwargs: Any) -> None:
        pass
