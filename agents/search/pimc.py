"""The compiled flat search bot (spec ``pimc``: perfect-information Monte Carlo, determinized)
with paired greedy playouts, every iteration in compiled code, and its belief twin (spec ``search``).

:class:`PIMCAgent` answers each take/refuse, discard and force decision with more than
one legal action by a search in :mod:`agents.search._search_kernels` (numba, the ``fast``
extra):

1. **Determinize** from the player's view only: the cards the player cannot see (the
   opponent's hidden hand and the stock) are dealt at random, the most plausible of
   ``tries`` deals kept: one where the opponent could not have melded the cards they
   refused, held no two cards making a set or run with a card they discarded, and would
   have discarded by the greedy rules the discard now face up
   (:func:`agents.search._search_kernels.implausibility`; the first two are the inference of
   :mod:`agents.search.ismcts`).
2. **Play every root action on that same deal**, then the greedy rules for both players
   to the end (common random numbers: the actions are compared on the same cards).
3. **Race.** Every 16 deals, an action whose paired mean is below the leader's by more
   than ``z`` standard errors is dropped, so the playouts go to the actions in doubt;
   the search ends when one action is left (or the budget is spent).
4. Play the action with the best mean score (win 1, draw 1/2, loss 0); ties go to the
   greedy rules' choice.

Meld phases follow the greedy plan, as in the Python search.  ``iterations`` counts
playouts (one determinization and one game played out: the unit of the Python search's
iterations); ``time`` sets seconds per decision instead, checked between chunks of
playouts sized from the pace so far, so a decision ends within a playout or two of its
budget (at the default 0.15 s, 49.5 ms per searched decision on average in 2000 games
against greedy, which it scored 0.582 [0.568, 0.596] against: docs/benchmarks.md).
With ``iterations`` and a ``seed`` the bot is deterministic, and its decisions
do not change when the hidden cards are permuted (the pool of unseen cards is sorted).

:func:`analyze` gives other code (training) the value and playout count of every legal
action for a batch of positions in one call, on all cores.

Spec: ``pimc[:time=0.15,iterations=...,z=3,tries=10,seed=...]``; the Python tree search of
:mod:`agents.search.ismcts` is ``ismcts-py``.
"""

from __future__ import annotations

import random
import time as _time
from collections.abc import Sequence

import numpy as np

from conquian_env.actions import NUM_ACTIONS
from conquian_env.extras import missing

from ..base import PlayerView
from ..catalog import bot
from ..greedy.greedy import GreedyAgent
from ..params import Flag, Integer, Real, bounded
from .frame import SearchBot

#: what the search's first compile is announced as, and about how long it takes in seconds
#: (the plain search's kernels on one core; the belief search's add a few: docs/benchmarks.md)
COMPILING = ("the search bots' kernels", 15)

try:
    from conquian_env import kernels as E
    from conquian_env.compiling import announce

    with announce(*COMPILING):  # importing the kernels compiles a check of their cache
        from . import _search_kernels as K
        from .rows import view_row
except ImportError as exc:  # pragma: no cover - exercised only without numba
    K = None
    _IMPORT_ERROR = exc

#: seconds per searched decision at most by default (the race ends most decisions sooner:
#: about 50 ms on average in games against greedy)
DEFAULT_TIME = 0.15
DEFAULT_Z = 3.0
DEFAULT_TRIES = 10
#: the first chunk of a timed search, in deals (its pace sizes the next chunks)
FIRST_CHUNK = 2
#: a timed chunk is sized to this share of the time left (the pace varies from deal to deal)
CHUNK_SHARE = 0.5


def _need_numba() -> None:
    if K is None:  # the registry names the spec the user typed in place of "the compiled search"
        raise missing(_IMPORT_ERROR, "the compiled search", instead="or play the Python search, spec 'ismcts-py'")


#: the allowed values of the search's parameters (the bots' and :func:`analyze`'s)
TIME = Real(1e-6, 3600, none=True)  # seconds per decision
ITERATIONS = Integer(1, 10**9, none=True)  # playouts per decision
Z = Real(0, 1000)
TRIES = Integer(1, 10**6)


@bot(
    "pimc",
    "compiled flat search (needs numba): paired greedy playouts of every action on plausible deals, racing",
    params={
        "time": ("0.15", "seconds per searched decision at most (the race ends most decisions sooner)"),
        "iterations": "playouts per decision instead of time (reproducible with a seed)",
        "z": "standard errors behind the leader at which an action leaves the race (0: never)",
        "tries": "deals drawn per determinization to find one explaining the opponent's play",
    },
)
class PIMCAgent(SearchBot):
    """The compiled determinized search (module docstring).

    ``time``: seconds per searched decision at most (default 0.15: the race ends most
    decisions sooner; ignored when ``iterations`` is given); ``iterations``: playouts per
    decision instead (reproducible); ``z``: standard errors at which an action leaves the
    race (0: never, every action gets every deal);
    ``tries``: deals drawn per determinization to find a plausible one (1: uniform deals);
    ``seed``: makes it reproducible (with ``iterations``).
    """

    name = "pimc"

    @bounded(time=TIME, iterations=ITERATIONS, z=Z, tries=TRIES)
    def __init__(
        self,
        time: float | None = None,
        iterations: int | None = None,
        z: float = DEFAULT_Z,
        tries: int = DEFAULT_TRIES,
        seed: int | None = None,
    ):
        _need_numba()
        self.iterations = iterations
        self.time = None if iterations is not None else float(DEFAULT_TIME if time is None else time)
        self.z = float(z)
        self.tries = tries
        self.seed = seed
        self.rng = random.Random(seed)
        self._melder = GreedyAgent()
        self._S = np.zeros((1, E.NUM_COLUMNS), dtype=np.int64)
        self._cache = K.new_cache()  # greedy plans, pure functions of their keys: kept across searches
        self._warm = False  # the kernels for this bot's knobs compiled or loaded (at its first game)
        #: playouts, deals and root statistics ``{action: (playouts, mean score)}`` of the last search
        self.last_iterations = 0
        self.last_deals = 0
        self.last_stats: dict[int, tuple[int, float]] = {}

    def clear_last(self) -> None:
        self.last_iterations = self.last_deals = 0
        self.last_stats = {}

    def reset(self, player: int, seed: int | None = None) -> None:
        super().reset(player, seed)
        if not self._warm:  # at the first game (every knob set by then), not in its first decision
            self._warm_up()
            self._warm = True

    def _warm_up(self) -> None:
        """Compile (or load from numba's cache) the search kernels for this bot's knobs now, by
        one deal of its own search from a new game (built as every search is, by :meth:`_new_search`),
        so that no decision pays for it: a signature missed here would cost seconds in the first
        decision.  Once loaded, a deal costs a millisecond."""
        from conquian_env.game import new_game

        state = new_game(seed=0)
        row, pool, n_opp = view_row(PlayerView(state, state.player))
        with announce(*COMPILING):  # the belief's kernels too
            K.run_search(*self._new_search(row, pool, n_opp, 1), 1)

    def _new_search(self, row: np.ndarray, pool: np.ndarray, n_opp: int, seed: int) -> tuple[K.Search, np.ndarray]:
        """A search of the position ``row, pool, n_opp`` with this bot's knobs and deals (the one place that
        builds :class:`agents.search._search_kernels.Search`, which the warm-up does too: one signature),
        and its per-deal results."""
        info, actions, active, results, sums = K.new_search(row, seed)
        keys, plans, filled = self._cache
        search = K.Search(
            row=row, pool=pool, n_opp=n_opp, odds=self.deal_odds(row, pool, n_opp), tries=self.tries, z=self.z,
            info=info, actions=actions, active=active, sums=sums, S=self._S, keys=keys, plans=plans, filled=filled,
        )  # fmt: skip
        return search, results

    def search(self, view: PlayerView) -> int:
        """Search the current decision of ``view``'s player; the action to play."""
        started = _time.perf_counter()
        row, pool, n_opp = view_row(view)
        search, results = self._new_search(row, pool, n_opp, self.rng.getrandbits(63) | 1)
        info, actions, active, sums = search.info, search.actions, search.active, search.sums
        n = int(info[K.I_ACTIONS])

        def run(deals: int) -> None:
            nonlocal results
            results = K.run_search(search, results, deals)

        if self.iterations is not None:
            while info[K.I_PLAYOUTS] < self.iterations and active[:n].sum() > 1:
                # a deal plays every action still in the race
                run(max(1, (self.iterations - int(info[K.I_PLAYOUTS])) // int(active[:n].sum())))
        else:
            deadline = started + self.time
            chunk = FIRST_CHUNK
            while True:
                run(chunk)
                now = _time.perf_counter()
                done = int(info[K.I_DEALS])
                # the next chunk: a share of the time left at the pace so far, and at most
                # half the deals so far (the pace of a few deals is a poor guess)
                chunk = min(int(CHUNK_SHARE * (deadline - now) * done / (now - started)), max(1, done // 2))
                if chunk < 1 or active[:n].sum() == 1:  # out of time, or the race is won
                    break
        self.last_iterations = int(info[K.I_PLAYOUTS])
        self.last_deals = int(info[K.I_DEALS])
        self.last_stats = {
            int(actions[k]): (int(sums[1, k]), float(0.5 * sums[0, k] / sums[1, k]) if sums[1, k] else 0.0)
            for k in range(n)
        }
        return int(K.best_action(info, actions, active, sums))

    def deal_odds(self, row: np.ndarray, pool: np.ndarray, n_opp: int) -> np.ndarray | None:
        """The odds of each pool card to be in the opponent's hand, for deals drawn from a belief;
        None (the plain search): uniform deals."""
        return None


@bot(
    "search",
    "the compiled search with deals drawn from the belief model of the opponent's hand (needs numba)",
    params={  # and pimc's, its parent's (time, iterations, z)
        "tries": "belief deals drawn per determinization, the most plausible kept (1: the belief alone)",
        "belief": "a belief model file (none: the shipped agents/data/conquian_belief.npz)",
        "uniform": "uniform deals instead of the belief's (with tries > 1: the plausibility filter)",
    },
)
class BeliefSearchAgent(PIMCAgent):
    """The compiled search with its deals drawn from the belief model of the opponent's hidden
    hand (spec ``search``; :mod:`agents.search.belief`): once per searched decision the model gives
    each unseen card its probability to be in the opponent's hand (shifted so that they add up
    to the hand's size), and every deal draws the hand card by card in proportion to the odds
    ``p / (1 - p)``, exactly as many cards as the opponent holds, the rest to the stock in a
    uniform order (:func:`agents.search.belief_kernels.deal_from_belief`).  ``tries`` > 1 keeps the
    most plausible of that many such deals (the plausibility filter on top of the belief);
    ``belief``: a model file (default: the shipped one); ``uniform``: uniform deals instead (with
    ``tries=10`` the deals of ``pimc``), for measuring what the belief gives.  The other knobs are the search's.
    """

    name = "search"

    @bounded(time=TIME, iterations=ITERATIONS, z=Z, tries=TRIES, uniform=Flag())
    def __init__(
        self,
        time: float | None = None,
        iterations: int | None = None,
        z: float = DEFAULT_Z,
        tries: int = 1,
        belief: str | None = None,
        uniform: bool = False,
        seed: int | None = None,
    ):
        from .belief import load_belief

        super().__init__(time=time, iterations=iterations, z=z, tries=tries, seed=seed)
        self.uniform = uniform
        self.belief = None if uniform else load_belief(belief)

    def deal_odds(self, row: np.ndarray, pool: np.ndarray, n_opp: int) -> np.ndarray | None:
        if self.belief is None:
            return None
        with np.errstate(over="ignore"):
            return np.exp(self.belief.pool_logits(row, pool, n_opp))


def analyze(
    views: Sequence[PlayerView],
    iterations: int = 2000,
    z: float = 0.0,
    tries: int = DEFAULT_TRIES,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Search every position of ``views`` (each a decision of its player) with
    ``iterations`` playouts, on all cores.

    Returns ``(values, counts, chosen)``: ``values[b, a]`` the mean score of action ``a``
    (win 1, draw 1/2, loss 0; NaN where not legal or not searched), ``counts[b, a]`` its
    playouts, ``chosen[b]`` the action the bot would play.  ``z`` = 0 (default) gives every
    legal action every deal (values of equal precision, for training); with ``z`` > 0 the
    actions race as in the bot (one more than ``z`` standard errors behind the leader is
    played out no more) and a position's search ends when one action is left, so
    ``iterations`` is a cap and the playouts go to the positions and actions in doubt.
    """
    _need_numba()
    iterations = Integer(1, ITERATIONS.high).check("iterations", iterations)
    z, tries = Z.check("z", z), TRIES.check("tries", tries)
    n_views = len(views)
    rows = np.zeros((n_views, E.NUM_COLUMNS), dtype=np.int64)
    pools = np.zeros((n_views, 40), dtype=np.int64)
    sizes = np.zeros(n_views, dtype=np.int64)
    n_opps = np.zeros(n_views, dtype=np.int64)
    for b, view in enumerate(views):
        if not view.legal_action_mask():
            raise ValueError(f"views[{b}]: the player {view.player} has no decision to make")
        rows[b], pool, n_opps[b] = view_row(view)
        sizes[b] = len(pool)
        pools[b, : len(pool)] = pool
    seeds = np.random.default_rng(seed).integers(1, 2**62, size=n_views, dtype=np.int64)
    values = np.full((n_views, NUM_ACTIONS), np.nan)
    counts = np.zeros((n_views, NUM_ACTIONS), dtype=np.int64)
    chosen = K.analyze_batch(rows, pools, sizes, n_opps, seeds, int(tries), float(z), int(iterations), values, counts)
    return values, counts, chosen


def label_rows(
    rows: np.ndarray, playouts: int, *, knows_hand: bool = False, seed: int = 0, blocks: int = 2
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The value of every candidate move (:func:`agents.scorer.scorer.candidate_features`' order) of
    each engine row (a decision with a choice of its player: an offer it may take or refuse, a
    discard among two cards or more), on ``blocks`` numba threads.

    Each value is the mean score (win 1, draw 1/2, loss 0) of ``playouts`` greedy playouts after
    the move, from the row with the cards the player cannot see drawn again (the same draws for
    every candidate, so differences are paired): the opponent's hidden cards and the stock left
    (a uniform determinization, the flat search's), or with ``knows_hand`` only the stock left,
    the opponent's true hand kept (a label that peeks: for measurements and training targets,
    never a bot's move).  The draws come from the unseen cards as a set, each row from its own
    stream (``seed`` and its index): how the hidden cards lie in the row, and ``blocks``, change nothing.

    Returns ``(x, actions, values, counts)``: the candidates' inputs ``(m, MAX_CANDIDATES,
    CANDIDATE_SIZE)``, their action ids (-1 past a row's count), values, and each row's count.
    """
    _need_numba()
    from ..scorer.scorer import CANDIDATE_SIZE, MAX_CANDIDATES

    playouts = Integer(1, ITERATIONS.high).check("playouts", playouts)
    blocks = Integer(1, 1024).check("blocks", blocks)
    rows = np.asarray(rows)
    if rows.ndim != 2 or rows.shape[1] != E.NUM_COLUMNS or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(
            f"rows must be engine rows, integers of shape (m, {E.NUM_COLUMNS}); got {rows.dtype} {rows.shape}"
        )
    rows = np.ascontiguousarray(rows, np.int64)
    phase, lcards, misc = rows[:, E.PHASE], rows[:, E.LCARDS], rows[:, E.LMISC]
    choice = ((phase == E.DISCARD) & (lcards & (lcards - 1) != 0)) | ((phase == E.OFFER) & (misc & 3 == 3))
    if not choice.all():
        bad = int(np.flatnonzero(~choice)[0])
        raise ValueError(
            f"rows[{bad}] is not a decision with a choice "
            "(an offer to take or refuse, a discard among two cards or more)"
        )
    m = len(rows)
    x = np.zeros((m, MAX_CANDIDATES, CANDIDATE_SIZE), np.float32)
    actions = np.full((m, MAX_CANDIDATES), -1, np.int64)
    values = np.zeros((m, MAX_CANDIDATES), np.float32)
    counts = np.zeros(m, np.int64)
    K.label_rows(rows, playouts, not knows_hand, int(seed), blocks, x, actions, values, counts)
    return x, actions, values, counts
