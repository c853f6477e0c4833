"""Self-play experience over the batched engine: every learning seat's decisions, linked per seat.

In a self-play game both seats are the learner, so a decision's *next state* is not the next row of
the rollout but the same seat's next decision in the same game (or the game's end).  A
:class:`SeatRollout` holds the decisions that reached the network (a forced move, the one legal
action, is played without it and leaves no row: it carries no policy gradient) in preallocated
arrays filled in place, and links each row to its seat's next one as the games go on:

* ``nxt[j] >= 0``: the row of the same seat's next decision in the same game;
* ``nxt[j] == TERMINAL``: the game ended before that seat decided again; ``reward[j]`` is its result;
* ``nxt[j] == PENDING``: not known yet when the rollout stopped.  Pending rows are not trained on
  in this update: they are carried to the front of the next rollout (:meth:`SeatRollout.carry`),
  linked there to their seat's next decision, and trained on then (their ``logp`` is the policy's
  that chose them, as PPO's ratio needs).

:func:`advantages` then computes GAE per seat along those links: for a row ``j`` with next row ``n``,
``delta = gamma * V(n) - V(j)`` and ``A(j) = delta + gamma * lambda * A(n)`` (``A = 0`` for a
pending row, which truncates the sum at the value there); a terminal row has ``A = r - V(j)``.

:func:`hidden_planes` gives what a player cannot see (the opponent's hand, the stock's cards and its
next card) for a critic that trains on the whole state; the policy never reads it.
"""

from __future__ import annotations

import numpy as np

from conquian_env.extras import missing

try:
    import numba as nb

    from conquian_env import kernels as K
except ImportError as err:  # numba, the 'fast' extra
    raise missing(err, "conquian_train.rollout (the self-play rollout)") from None
from conquian_env.actions import NUM_ACTIONS
from conquian_env.cards import NUM_CARDS
from conquian_env.observation import OBS_SIZE

#: ``nxt`` of a row whose game ended before its seat decided again
TERMINAL = -1
#: ``nxt`` of a row whose seat's next decision is not known yet (carried to the next rollout)
PENDING = -2
#: width of :func:`hidden_planes`: the opponent's hand, the stock's cards, the stock's next card
HIDDEN_SIZE = 3 * NUM_CARDS


@nb.njit(cache=True, nogil=True)
def link_rows(last, games, seats, base, nxt):  # pragma: no cover - compiled
    """Rows ``base + k`` are the decisions of seat ``seats[k]`` in game ``games[k]``: link each seat's
    previous pending row to it and make it the seat's pending row."""
    for k in range(len(games)):
        j = base + k
        i = last[games[k], seats[k]]
        if i >= 0:
            nxt[i] = j
        last[games[k], seats[k]] = j
        nxt[j] = PENDING


@nb.njit(cache=True, nogil=True)
def end_games(last, done, rewards, nxt, reward):  # pragma: no cover - compiled
    """The games ``done`` ended with ``rewards[g, seat]``: each seat's pending row becomes terminal."""
    for g in done:
        for p in range(2):
            i = last[g, p]
            if i >= 0:
                nxt[i] = TERMINAL
                reward[i] = rewards[g, p]
                last[g, p] = -1


@nb.njit(cache=True, nogil=True)
def advantages(nxt, reward, value, gamma, lam, adv):  # pragma: no cover - compiled
    """GAE along each seat's links (see the module docstring), written into ``adv``; rows are linked
    forward only, so one backward pass suffices."""
    for j in range(len(nxt) - 1, -1, -1):
        n = nxt[j]
        if n == PENDING:
            adv[j] = 0.0
        elif n == TERMINAL:
            adv[j] = reward[j] - value[j]
        else:
            adv[j] = gamma * value[n] - value[j] + gamma * lam * adv[n]


@nb.njit(cache=True, nogil=True)
def hidden_planes(state, rows, players, out):  # pragma: no cover - compiled
    """What ``players[k]`` cannot see in game ``rows[k]``: out[k, 0:40] the opponent's hand,
    [40:80] the cards left in the stock, [80:120] the stock's next card (none when empty)."""
    for k in range(len(rows)):
        r = rows[k]
        opp = state[r, K.H1] if players[k] == 0 else state[r, K.H0]
        for c in range(NUM_CARDS):
            out[k, c] = (opp >> c) & 1
            out[k, NUM_CARDS + c] = 0
            out[k, 2 * NUM_CARDS + c] = 0
        pos = state[r, K.SPOS]
        for s in range(pos, K.STOCK_SIZE):
            out[k, NUM_CARDS + state[r, K.STOCK0 + s]] = 1
        if pos < K.STOCK_SIZE:
            out[k, 2 * NUM_CARDS + state[r, K.STOCK0 + pos]] = 1


def _pinned_zeros(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """A zeroed array in page-locked memory (torch's), so that copies to a GPU run asynchronously."""
    import torch

    kind = {np.int8: torch.int8, np.bool_: torch.bool}[dtype]
    return torch.zeros(shape, dtype=kind, pin_memory=True).numpy()


class SeatRollout:
    """Preallocated rows of network decisions (see the module docstring), for ``num_games`` games
    and at most ``capacity`` new rows per rollout (plus the pending rows carried in); ``pinned``: the
    network's inputs in page-locked memory (a GPU learner); ``inputs``: the width of a row's observation
    (the raw observation's, or a feature set's such as ``"potential"``)."""

    def __init__(self, num_games: int, capacity: int, hidden: bool, pinned: bool = False, inputs: int = OBS_SIZE):
        size = capacity + 2 * num_games  # every seat of every game may carry one pending row
        self.size = size
        zeros = _pinned_zeros if pinned else np.zeros  # pinned: page-locked, for copies to a GPU
        self.obs = zeros((size, inputs), dtype=np.int8)
        self.mask = zeros((size, NUM_ACTIONS), dtype=np.bool_)
        self.hidden = zeros((size, HIDDEN_SIZE), dtype=np.int8) if hidden else None
        self.action = np.zeros(size, dtype=np.int64)
        self.logp = np.zeros(size, dtype=np.float32)
        self.value = np.zeros(size, dtype=np.float32)
        self.reward = np.zeros(size, dtype=np.float32)
        self.nxt = np.full(size, PENDING, dtype=np.int64)
        self.adv = np.zeros(size, dtype=np.float32)
        self.last = np.full((num_games, 2), -1, dtype=np.int64)
        self.count = 0

    def reset(self) -> None:
        """Forget every row and every seat's pending one (a new segment: the games are dealt anew)."""
        self.last[:] = -1
        self.count = 0

    def add(self, games: np.ndarray, seats: np.ndarray) -> slice:
        """Room for one decision of each ``seats[k]`` in game ``games[k]``, linked; the rows' slice
        (the caller fills ``obs``, ``mask``, ``action``, ``logp``, ``hidden`` there)."""
        base, k = self.count, len(games)
        if base + k > self.size:
            raise RuntimeError(f"rollout full: {base + k} rows needed, {self.size} allocated")
        link_rows(self.last, games, seats, base, self.nxt)
        self.count = base + k
        return slice(base, base + k)

    def end(self, done: np.ndarray, rewards: np.ndarray) -> None:
        """Games ``done`` ended with ``rewards`` ((N, 2), each seat's result)."""
        if len(done):
            end_games(self.last, done, rewards.astype(np.float32, copy=False), self.nxt, self.reward)

    def trainable(self) -> np.ndarray:
        """The rows whose next state is known (the ones an update may train on)."""
        return np.flatnonzero(self.nxt[: self.count] != PENDING)

    def compute_advantages(self, gamma: float, lam: float) -> None:
        n = self.count
        advantages(self.nxt[:n], self.reward[:n], self.value[:n], gamma, lam, self.adv[:n])

    def carry(self, into: SeatRollout | None = None) -> int:
        """Move the pending rows to the front of ``into`` (default: this rollout itself) for the next
        rollout, relinking their seats there; returns how many were carried.  Carrying into another
        rollout only reads this one (an update may read it meanwhile)."""
        into = self if into is None else into
        n = self.count
        pend = np.flatnonzero(self.nxt[:n] == PENDING)
        m = len(pend)
        for name in ("obs", "mask", "action", "logp", "value", "reward", "hidden"):
            a = getattr(self, name)
            if a is not None:
                getattr(into, name)[:m] = a[pend]
        into.nxt[:m] = PENDING
        where = np.full(n, -1, dtype=np.int64)
        where[pend] = np.arange(m)
        held = self.last >= 0
        last = np.full_like(self.last, -1)
        last[held] = where[self.last[held]]
        into.last[:] = last
        into.count = m
        return m
