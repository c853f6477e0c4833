"""The batched engine: N Conquian games held as arrays and advanced with one call.

::

    from conquian_env.vector import VectorGame
    games = VectorGame(1024, seed=0)          # 1024 fresh deals
    obs, masks = games.observe()               # (1024, OBS_SIZE) int8, (1024, 85) int8
    while ...:
        actions = policy(obs, masks)           # one action per game, for its player to move
        result = games.step(actions)           # finished games restart from fresh deals
        obs, masks = result.observations, result.masks

The rules run in compiled code (numba, nopython, cached on disk): ``import conquian_env``
does not need numba, this module does (``pip install conquian-env[fast]``).  Everything
is exactly the scalar engine (:mod:`conquian_env.game`): the same masks, the same
observations (:mod:`conquian_env.observation`; ``OBS_SIZE`` wide, the size of
:data:`conquian_env.layout.OBSERVATION`), the same results, for the same deal and
actions, rule variants included; ``tests/test_vector.py`` checks it game by game.

Each game's state is one row of :attr:`VectorGame.state` (the layout is in
:mod:`conquian_env.kernels`, the fields of :data:`conquian_env.game.FIELDS` in order:
:data:`ROW_LAYOUT`); :meth:`VectorGame.get_game` / :meth:`VectorGame.set_game` convert a
row to and from a :class:`~conquian_env.game.GameState` (stacked deals, search positions),
field by field from that table.  Deals are drawn from one ``numpy.random.Generator`` seeded by ``seed``, one
permutation per new game in game order, so the same seed gives the same games in any
process.  A permutation deals as :func:`conquian_env.game.shuffled_deal` does: cards one
at a time to players 0 and 1, the last twenty the stock, top first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .extras import missing

try:
    from . import kernels as K
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "conquian_env.vector (the batched engine)") from None
from .actions import NUM_ACTIONS
from .cards import CARD_NAMES, NUM_CARDS
from .game import (
    BOOL,
    FIELD_WIDTH,
    FIELDS,
    PAIR,
    PHASE_NAMES,
    RULES,
    STOCK,
    GameState,
    IllegalActionError,
    blank_state,
    validate_deal,
)
from .layout import KERNEL_ROW
from .observation import OBS_SIZE
from .rules import Rules, resolve

#: at and above this many games the kernels run on all cores (numba prange)
PARALLEL_MIN_GAMES = 256


#: first column of each GameState field (and of the legal-move cache) in a row, by name, and
#: the row's length as ``num_columns``: :data:`conquian_env.layout.KERNEL_ROW`, the fields of
#: :data:`~conquian_env.game.FIELDS` in table order, each :data:`~conquian_env.game.FIELD_WIDTH`
#: columns wide, with the compiled legal-move cache (``legal_cards``, ``legal_other``: the scalar
#: ``_mask``) just before the stock.  The kernels' column constants (``kernels.H0`` ...) are
#: generated from the same layout (``python -m conquian_env.layout --write``).
ROW_LAYOUT = {**KERNEL_ROW.offsets, "num_columns": KERNEL_ROW.size}
#: (name, kind, first column, width) of each field, for the row conversions
_ROW_FIELDS = tuple((f.name, f.kind, ROW_LAYOUT[f.name], FIELD_WIDTH[f.kind]) for f in FIELDS)


@dataclass
class StepResult:
    """What :meth:`VectorGame.step` returns (arrays over the games, row ``i`` = game ``i``).

    ``observations`` / ``masks``: of the player to move next (in a new game for rows that
    finished); ``players``: that player; ``dones``: the game in that row ended with this
    step and a new one was dealt; ``rewards[i, p]``: the finished game's result for player
    ``p`` (+1, -1 or 0; zero where not done); ``winners``: 0, 1, or -1 for a draw (-2
    where not done); ``moves``: decisions the finished game took; ``illegal``: the row's
    action was illegal and its player lost the game (``illegal_action="penalize"``).
    ``observations`` and ``masks`` are the engine's own arrays, overwritten by the next step
    (copy them to keep them).  ``observations`` is None when the game was built with
    ``observations=False``, and both
    ``observations`` and ``masks`` are None after ``step(..., observe=False)``.
    """

    observations: np.ndarray | None
    masks: np.ndarray | None
    players: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    winners: np.ndarray
    moves: np.ndarray
    illegal: np.ndarray


def _as_int_array(values: Any, n: int, what: str, cast: bool = True) -> np.ndarray:
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have shape ({n},) (one per game), got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        raise ValueError(f"{what} must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False) if cast else arr


def check_seed(seed: Any, what: str = "seed", generator: bool = False) -> Any:
    """``seed`` if it is None or an integer >= 0 (or, with ``generator``, a numpy Generator),
    as a plain int; otherwise a ValueError naming ``what`` and what it may be."""
    if generator and isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return None
    allowed = "an integer >= 0, a numpy Generator or None" if generator else "an integer >= 0 or None"
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{what} must be {allowed}, got {seed!r}")
    return int(seed)


def _check_deals(deals: Any, n: int) -> np.ndarray:
    arr = np.asarray(deals)
    if arr.shape != (n, NUM_CARDS) or not np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
        raise ValueError(
            f"deals must be an integer array of shape ({n}, {NUM_CARDS}): one permutation of the 40 card "
            f"indexes per game (hands dealt alternately from the front, then the stock), got "
            f"{arr.dtype} {arr.shape}"
        )
    arr = arr.astype(np.int64)
    ok = np.sort(arr, axis=1) == np.arange(NUM_CARDS)
    if not ok.all():
        bad = int(np.flatnonzero(~ok.all(axis=1))[0])
        raise ValueError(f"deal {bad} is not a permutation of the card indexes 0..39: {arr[bad].tolist()}")
    return arr


class VectorGame:
    """``num_games`` Conquian games advanced in lockstep (see the module docstring).

    ``rules``: the :class:`~conquian_env.rules.Rules` of every new game (any of its fields as a
    keyword shortcut, :func:`conquian_env.rules.resolve`); a game put in a row with :meth:`set_game`
    keeps its own.
    ``first``: who plays first in each new game, 0, 1, or ``"alternate"`` (player 0 in
    even-numbered deals, 1 in odd ones, counting every deal this object makes).
    ``illegal_action``: ``"raise"`` (default: nothing changes and ``IllegalActionError``
    names the game, the action and the legal ones) or ``"penalize"`` (the offender loses
    that game, flagged in :attr:`StepResult.illegal`).  ``observations=False`` skips the
    observation arrays (masks only), the fastest way to drive the rules.
    ``parallel``: run the kernels on all cores (default: when ``num_games`` is at least
    :data:`PARALLEL_MIN_GAMES`).
    """

    def __init__(
        self,
        num_games: int,
        seed: int | np.random.Generator | None = None,
        *,
        rules: Rules | None = None,
        first: int | str = 0,
        illegal_action: str = "raise",
        observations: bool = True,
        parallel: bool | None = None,
        **rule_fields: bool,
    ):
        if isinstance(num_games, (bool, np.bool_)) or not isinstance(num_games, (int, np.integer)) or num_games < 1:
            raise ValueError(f"num_games must be a positive integer, got {num_games!r}")
        rules = resolve(rules, **rule_fields)
        if isinstance(first, (int, np.integer)) and not isinstance(first, (bool, np.bool_)) and first in (0, 1):
            first = int(first)  # a numpy integer too, as new_game takes it
        elif not (isinstance(first, str) and first == "alternate"):
            raise ValueError(f"first must be 0, 1 or 'alternate', got {first!r}")
        if illegal_action not in ("raise", "penalize"):
            raise ValueError(f"illegal_action must be 'raise' or 'penalize', got {illegal_action!r}")
        self.num_games = n = int(num_games)
        self.rules = rules
        self.first = first
        self.illegal_action = illegal_action
        self.with_observations = bool(observations)
        self.parallel = n >= PARALLEL_MIN_GAMES if parallel is None else bool(parallel)
        self.state = np.zeros((n, K.NUM_COLUMNS), dtype=np.int64)
        self.observations = np.zeros((n, OBS_SIZE), dtype=np.int8) if observations else None
        self.masks = np.zeros((n, NUM_ACTIONS), dtype=np.int8)
        self.deals_made = 0
        self._status = np.zeros(n, dtype=np.int64)
        self._to_move = np.full(n, -1, dtype=np.int64)
        self.reset(seed)

    # ------------------------------------------------------------------ dealing
    def reset(
        self, seed: int | np.random.Generator | None = None, deals: Any = None
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """Start every game afresh: from ``deals`` ((N, 40) permutations) or drawn from ``seed``.

        A new ``seed`` (or Generator) replaces the deal generator; without one the current
        generator goes on.  Returns ``(observations, masks)`` of the players to move.
        """
        seed = check_seed(seed, generator=True)
        perms = None if deals is None else _check_deals(deals, self.num_games)  # before anything changes
        if seed is not None or not hasattr(self, "rng"):
            self.reseed(seed)
        rows = np.arange(self.num_games)
        self._start(rows, self._draw(self.num_games) if perms is None else perms)
        return self.observe()

    def reseed(self, seed: int | np.random.Generator | None) -> None:
        """Replace the deal generator (and restart the count of deals, which decides who plays
        first with ``first="alternate"``), so that the same seed gives the same games; the
        games in play are not touched."""
        seed = check_seed(seed, generator=True)
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self.deals_made = 0

    def _draw(self, k: int) -> np.ndarray:
        return self.rng.permuted(np.broadcast_to(np.arange(NUM_CARDS, dtype=np.int64), (k, NUM_CARDS)), axis=1)

    def _start(self, rows: np.ndarray, perms: np.ndarray) -> None:
        if self.first == "alternate":
            first = (self.deals_made + np.arange(len(rows))) & 1
        else:
            first = np.full(len(rows), self.first, dtype=np.int64)
        self.deals_made += len(rows)
        K.start_games(self.state, rows.astype(np.int64), perms, first.astype(np.int64), self.rules.flags)

    # ------------------------------------------------------------------ queries
    @property
    def players(self) -> np.ndarray:
        """Player to move in each game (-1 in a finished game: only after ``step(autoreset=False)``)."""
        over = self.state[:, K.PHASE] == K.GAME_OVER
        return np.where(over, -1, self.state[:, K.PLAYER])

    @property
    def phases(self) -> np.ndarray:
        return self.state[:, K.PHASE].copy()

    def observe(self, players: Any = None) -> tuple[np.ndarray | None, np.ndarray]:
        """Observations and masks of ``players`` (default: the player to move in each game),
        written into and returned as :attr:`observations` / :attr:`masks` (reused arrays)."""
        who = self._to_move if players is None else _as_int_array(players, self.num_games, "players")
        if players is not None and ((who < 0) | (who > 1)).any():
            raise ValueError("players must be 0 or 1 in every game")
        if self.observations is None:
            K.masks_only(self.state, who, self.masks)
        elif self.parallel:
            K.observe_parallel(self.state, who, self.observations, self.masks)
        else:
            K.observe_serial(self.state, who, self.observations, self.masks)
        return self.observations, self.masks

    def observe_rows(
        self, rows: Any, players: Any = None, *, masks_only: bool = False
    ) -> tuple[np.ndarray | None, np.ndarray]:
        """New arrays with the observations (None with ``masks_only``) and masks of
        ``players`` (default: the player to move) in the games ``rows``."""
        r = self._rows(rows)
        who = self.state[r, K.PLAYER] if players is None else _as_int_array(players, len(r), "players")
        if ((who < 0) | (who > 1)).any():
            raise ValueError("players must be 0 or 1 in every game")
        masks = np.zeros((len(r), NUM_ACTIONS), dtype=np.int8)
        if masks_only:
            K.masks_rows(self.state, r, who, masks)
            return None, masks
        obs = np.zeros((len(r), OBS_SIZE), dtype=np.int8)
        K.observe_rows(self.state, r, who, obs, masks)
        return obs, masks

    def _rows(self, rows: Any) -> np.ndarray:
        if rows is None:
            return np.arange(self.num_games, dtype=np.int64)
        r = np.asarray(rows)
        if r.ndim == 1 and r.size == 0:
            return np.zeros(0, dtype=np.int64)
        if r.ndim != 1 or not np.issubdtype(r.dtype, np.integer) or r.dtype == np.bool_:
            raise ValueError(f"rows must be a 1-d array of game indexes, got {r.dtype} {r.shape}")
        if len(r) and (r.min() < 0 or r.max() >= self.num_games):
            raise ValueError(f"rows must be game indexes from 0 to {self.num_games - 1}")
        return r.astype(np.int64, copy=False)

    def random_actions(self, rng: np.random.Generator | None = None, rows: Any = None) -> np.ndarray:
        """A uniformly random legal action in each game of ``rows`` (default all), drawn with
        ``rng`` (default: the deal generator); -1 in a finished game."""
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy Generator (numpy.random.default_rng(seed)) or None, got {rng!r}")
        r = self._rows(rows)
        u = (self.rng if rng is None else rng).random(len(r))
        out = np.empty(len(r), dtype=np.int64)
        K.random_actions(self.state, r, u, out)
        return out

    # ------------------------------------------------------------------ moves
    def step(self, actions: Any, where: Any = None, *, autoreset: bool = True, observe: bool = True) -> StepResult:
        """Play one action in every game (for its player to move) and deal anew where a game ends.

        ``where``: a boolean array; games where it is False are left as they are (their
        action is ignored), e.g. where another seat is to move.  ``autoreset=False`` leaves
        finished games over (flagged in ``dones``) until :meth:`redeal`; stepping a finished
        game is then an error.  ``observe=False`` skips the observation and mask arrays.
        """
        given = _as_int_array(actions, self.num_games, "actions", cast=False)
        w = np.ones(self.num_games, dtype=bool)
        if where is not None:
            w = np.asarray(where)
            if w.shape != (self.num_games,) or w.dtype != np.bool_:
                raise ValueError(f"where must be a boolean array of shape ({self.num_games},), got {w.dtype} {w.shape}")
        out_of_range = w & ((given < 0) | (given >= NUM_ACTIONS))  # in the given dtype: uint64 must not wrap
        if out_of_range.any():
            bad = int(np.flatnonzero(out_of_range)[0])
            raise ValueError(
                f"game {bad}: {int(given[bad])} is not an action id (they run from 0 to {NUM_ACTIONS - 1}); "
                "pass where= to leave games out"
            )
        a = np.where(w, given.astype(np.int64), -1)  # -1: the kernels leave that game as it is
        over = self.state[:, K.PHASE] == K.GAME_OVER
        if (over & (a != -1)).any():
            bad = int(np.flatnonzero(over & (a != -1))[0])
            raise ValueError(f"game {bad} is over: redeal() it (or leave it out with where=) before playing on")
        if self.illegal_action == "raise":
            bad = K.check_actions(self.state, a)
            if bad >= 0:
                raise self.illegal_error(bad, int(a[bad]))
        status = self._status
        if self.parallel:
            K.step_parallel(self.state, a, status)
        else:
            K.step_serial(self.state, a, status)
        dones = (self.state[:, K.PHASE] == K.GAME_OVER) & ~over
        winners = np.where(dones, self.state[:, K.WINNER], -2)
        rewards = np.zeros((self.num_games, 2), dtype=np.float32)
        moves = np.where(dones, self.state[:, K.MOVES], 0)
        illegal = status == 1
        if dones.any():
            rows = np.flatnonzero(dones)
            w = winners[rows]
            rewards[rows, 0] = np.where(w == 0, 1.0, np.where(w == 1, -1.0, 0.0))
            rewards[rows, 1] = np.where(w == 1, 1.0, np.where(w == 0, -1.0, 0.0))
            if autoreset:
                self.redeal(rows)
        obs, masks = self.observe() if observe else (None, None)
        return StepResult(obs, masks, self.players, rewards, dones, winners, moves, illegal)

    def illegal_error(self, row: int, action: int) -> IllegalActionError:
        """The error for ``action`` in game ``row``, which the compiled check found illegal:
        the scalar engine's one judgement (``GameState.check_action``), naming the game."""
        try:
            self.get_game(row).check_action(action)
        except ValueError as err:
            return IllegalActionError(f"game {row}: {err}")
        raise AssertionError(f"game {row}: the compiled engine and the scalar one disagree on action {action}")

    def redeal(self, rows: Any) -> None:
        """Deal new games (from the deal generator) in ``rows``."""
        r = self._rows(rows)
        if len(r):
            self._start(r, self._draw(len(r)))

    def play_random(self, decisions: int, seed: int = 0) -> int:
        """Random legal play entirely in compiled code: ``decisions`` per game, finished games
        restart from fresh shuffles.  Returns the number of games finished (the benchmark loop)."""
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=self.num_games)
        return int(K.play_random_parallel(self.state, seeds, int(decisions)).sum())

    # ------------------------------------------------------------------ rows <-> GameState
    def _index(self, i: Any) -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.num_games:
            raise ValueError(f"a game index is an integer from 0 to {self.num_games - 1}, got {i!r}")
        return int(i)

    def get_game(self, i: int) -> GameState:
        """Game ``i`` as a scalar :class:`GameState` (a copy)."""
        r = self.state[self._index(i)].tolist()  # plain ints
        s = blank_state()
        for name, kind, at, width in _ROW_FIELDS:
            if kind == PAIR:
                value: Any = r[at : at + width]
            elif kind == STOCK:
                value = tuple(r[at : at + width])
            elif kind == BOOL:
                value = bool(r[at])
            elif kind == RULES:
                value = Rules.from_flags(r[at])
            else:
                value = r[at]
            setattr(s, name, value)
        s._mask = -1
        return s

    def set_game(self, i: int, game: GameState) -> None:
        """Put a scalar game (any position, e.g. a stacked deal or a search state) in row ``i``.

        The state is checked first (:meth:`GameState.validate`: a ``ValueError`` naming the
        field); on any error the row is left as it was."""
        if not isinstance(game, GameState):
            raise ValueError(f"set_game needs a GameState, got {type(game).__name__}")
        i = self._index(i)
        game.validate(legal_move=False)  # the legal move is checked below, by the compiled mask
        row = np.zeros((1, K.NUM_COLUMNS), dtype=np.int64)  # built aside, then copied in whole
        r = row[0]
        for name, kind, at, width in _ROW_FIELDS:
            value = getattr(game, name)
            if kind == PAIR or kind == STOCK:
                r[at : at + width] = value
            elif kind == RULES:
                r[at] = value.flags
            else:
                r[at] = int(value)
        K.compute_legal(row, 0)
        if game.phase == K.GAME_OVER:
            r[K.LCARDS] = r[K.LMISC] = 0
        elif not (r[K.LCARDS] or r[K.LMISC]):
            name = PHASE_NAMES[game.phase]
            raise ValueError(f"GameState: player {game.player} has no legal action in phase {name}")
        self.state[i] = r


def deal_permutation(hands: Any, stock: Any) -> np.ndarray:
    """The permutation (for ``VectorGame.reset(deals=...)``) of a stacked deal: two hands of
    ten cards and the stock top first, as ``new_game(hands=..., stock=...)`` takes them."""
    masks, stock_cards = validate_deal(hands, stock)
    h0 = [c for c in range(NUM_CARDS) if masks[0] >> c & 1]
    h1 = [c for c in range(NUM_CARDS) if masks[1] >> c & 1]
    order = [c for pair in zip(h0, h1, strict=True) for c in pair] + list(stock_cards)
    return np.array(order, dtype=np.int64)


def deal_cards(permutation: Any) -> tuple[list[list[str]], list[str]]:
    """The stacked deal (two hands of ten cards, the stock top first, as card text) of a kernel
    deal: a permutation of the 40 cards whose first 20 are dealt one at a time starting with
    player 0 (:func:`deal_permutation`'s inverse, up to the order within a hand)."""
    order = [int(c) for c in np.asarray(permutation).ravel()]
    if sorted(order) != list(range(NUM_CARDS)):
        raise ValueError(f"a deal must be a permutation of the {NUM_CARDS} cards, got {order!r}")
    hands = [[CARD_NAMES[c] for c in sorted(order[p:20:2])] for p in (0, 1)]
    return hands, [CARD_NAMES[c] for c in order[20:]]
