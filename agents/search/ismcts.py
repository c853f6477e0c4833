"""Information-set Monte Carlo tree search for Conquian (single-observer ISMCTS).

``ISMCTSAgent`` follows Cowling, Powley & Whitehouse (2012), "Information Set Monte Carlo
Tree Search", single-observer variant.  Each iteration:

1. **Determinize.**  Sample a full game consistent with what the bot knows:
   :meth:`PlayerView.determinize` re-deals the opponent's hidden hand and the stock.  With
   ``infer`` on (default) up to ten samples are drawn and the one that best explains the
   opponent's public choices is kept: an opponent who refused a card could not meld it
   with their hand, and one who discarded a card did not hold two cards making a set or
   run with it (hands only shrink, so today's hand was part of the hand they held then).
   The bot reads only the view, never the real state behind it.
2. **Select and expand.**  The tree is built over the searching player's information: a
   node is reached by a sequence of decisions and what they revealed publicly (the next
   face-up card, both melds), so one node serves every determinization that agrees on
   that.  Actions are shared across determinizations; one that is legal in only some of
   them (the opponent can take a card, or discard a card, only if the sampled hand has
   it) is scored by UCB1 with *availability counts*: the number of visits in which the
   action was available replaces the parent's visit count.  A node expands one untried
   action per iteration, the rollout policy's own choice first, so a node with few
   visits is scored as the policy would play it.
3. **Roll out** to the end of the game with the rules of :class:`agents.greedy.greedy.GreedyAgent`
   for both players (:func:`greedy_rollout`), each player judging by what they can see in
   the determinization.
4. **Back up** the result: a win scores 1, a draw 1/2, a loss 0 for the searching player
   (the scoring of a match); each edge keeps the mean score of the player who chose it,
   so the opponent's choices in the tree minimise the bot's score.

Searched decisions are take/refuse, discard and force, for both players.  The meld phase
(which hand cards go down with a taken card) is not searched: in the tree and in the bot's
own real moves it follows the greedy bot's plan.  Decisions with a single legal action
are answered at once.  The move played is the root action with the most visits (ties go
to the greedy rules' choice).

Its time per decision and its score against ``greedy`` are measured in ``docs/benchmarks.md``;
the numbers live there, not here.  The knobs that measured nothing are gone: the
``rollout`` policy (fast and random rollouts were no stronger per second than greedy ones),
``batch`` (greedy playouts batched on the compiled engine gained nothing at equal time: the
time goes to the Python tree) and ``depth`` (never measured); docs/benchmarks.md keeps those
measurements.

With ``time`` set the search runs that many seconds per decision instead of a fixed number
of iterations (and is then not reproducible).  Under a fixed ``seed`` the bot is
deterministic, and since a determinization depends only on the player's own information,
its decisions do not change when the hidden cards are permuted.
"""

from __future__ import annotations

import math
import random
import time as _time

import numpy as np

from conquian_env.actions import FINISH, TAKE
from conquian_env.cards import cards_of
from conquian_env.game import GAME_OVER, MELD, OFFER, GameState
from conquian_env.melds import can_extend_to_meld, can_split_into_melds

from ..base import PlayerView
from ..catalog import bot
from ..greedy.greedy import (
    NEIGHBOURS,
    PARTNERS,
    GreedyAgent,
    greedy_decision,
    plan_take,
    refusing_feeds_opponent,
)
from ..params import Flag, Integer, Real, bounded
from .frame import SearchBot

DEFAULT_ITERATIONS = 500
DEFAULT_C = 0.7
DRAW_SCORE = 0.5
#: determinizations drawn per iteration (at most) when looking for a plausible one
INFER_TRIES = 10
_TAKE_BIT = 1 << TAKE

Evidence = tuple[int, list[int], list[int]]


class _Edge:
    """Statistics of one action at one node, and the nodes it led to by public outcome."""

    __slots__ = ("visits", "score", "avail", "children")

    def __init__(self) -> None:
        self.visits = 0
        self.score = 0.0  # summed score of the player who chose this action
        self.avail = 0
        self.children: dict[tuple[int, ...], dict[int, _Edge]] = {}


# ---------------------------------------------------------------- fixed policies on a full state
# Each reads only what the player to move can see: their hand and the public cards.


def _greedy_decision(state: GameState) -> int:
    """The greedy rules' offer, discard or force decision for the player to move."""
    p = state.player
    opp = 1 - p
    action, _ = greedy_decision(
        state.phase,
        state.hands[p],
        state.melds[p],
        state.unseen_cards(p),
        state.melds[opp],
        state.hands[opp].bit_count(),
        state.face_up,
        bool(state.legal_action_mask() & _TAKE_BIT) if state.phase == OFFER else False,
        refusing_feeds_opponent(PlayerView(state, p)),
    )
    return action


def _greedy_lay(state: GameState) -> int:
    """Hand cards to lay with the taken card, by the greedy plan (goes out whenever it can)."""
    p = state.player
    opp = 1 - p
    lay, _, _ = plan_take(
        state.hands[p],
        state.melds[p],
        state.face_up,
        state.chosen,
        state.unseen_cards(p),
        state.melds[opp],
        state.hands[opp].bit_count(),
    )
    return lay


def _play_meld(state: GameState, lay: int) -> None:
    """Lay ``lay`` (hand cards) with the taken card and finish the meld."""
    for card in cards_of(lay & ~state.chosen):
        state.apply(card)  # meld action id == card index
    state.apply(FINISH)


def greedy_rollout(state: GameState, rng: random.Random) -> None:
    """Play to the end with the greedy rules for both players."""
    while state.phase != GAME_OVER:
        if state.phase == MELD:
            _play_meld(state, _greedy_lay(state))
        else:
            state.apply(_greedy_decision(state))


# ---------------------------------------------------------------- opponent inference


def opponent_evidence(view: PlayerView) -> Evidence:
    """The opponent's meld, the cards they refused that did not fit it alone, their discards."""
    opp = 1 - view.player
    opp_meld = view.opponent_meld
    refused = [c for c in cards_of(view.refusals(opp)) if not can_split_into_melds(opp_meld | 1 << c)]
    return opp_meld, refused, cards_of(view.discards(opp))


def implausibility(state: GameState, opp: int, evidence: Evidence) -> int:
    """How many of the opponent's refusals and discards the sampled hand contradicts.

    A contradiction is a refused card the sampled hand could meld (with today's meld: an
    approximation, the meld may have grown since), or a discarded card that makes a
    3-card set or run with two cards of the sampled hand.
    """
    opp_meld, refused, discarded = evidence
    hand = state.hands[opp] & ~state.chosen
    bad = 0
    for card in refused:
        if NEIGHBOURS[card] & hand and can_extend_to_meld(opp_meld | 1 << card, hand):
            bad += 1
    for card in discarded:
        near = NEIGHBOURS[card] & hand
        if near & (near - 1):  # at least two neighbours held
            for pm in PARTNERS[card]:
                if pm & hand == pm:
                    bad += 1
                    break
    return bad


def plausible_determinization(view: PlayerView, evidence: Evidence | None, rng: random.Random) -> GameState:
    """A determinization of ``view``; with ``evidence`` (:func:`opponent_evidence`) the most
    plausible of up to INFER_TRIES samples (shared by the search bots)."""
    state = view.determinize(rng)
    if evidence is None:
        return state
    opp = 1 - view.player
    best, best_bad = state, implausibility(state, opp, evidence)
    tries = 1
    while best_bad and tries < INFER_TRIES:
        state = view.determinize(rng)
        bad = implausibility(state, opp, evidence)
        if bad < best_bad:
            best, best_bad = state, bad
        tries += 1
    return best


# ---------------------------------------------------------------- the agent


def greedy_first_actions(view: PlayerView) -> list[int]:
    """The legal actions, the greedy rules' choice first (it is expanded first and wins ties)."""
    legal = view.legal_actions()
    if view.phase == MELD or len(legal) < 2:  # melds follow the greedy plan; nothing to order
        return legal
    passes = refusing_feeds_opponent(view)
    first, _ = greedy_decision(
        view.phase,
        view.hand,
        view.meld,
        view.unseen(),
        view.opponent_meld,
        view.opponent_hand_size,
        view.face_up,
        TAKE in legal,
        passes,
    )
    return [first] + [a for a in legal if a != first]


@bot(
    "ismcts-py",
    "the Python information-set Monte Carlo tree search (readable reference; slow)",
    params={
        "iterations": "simulations per decision",
        "time": "seconds per decision (overrides iterations when given)",
        "c": "UCB exploration constant (scores in [0, 1])",
        "infer": "prefer deals that explain the opponent's refusals and discards",
    },
)
class ISMCTSAgent(SearchBot):
    """Single-observer ISMCTS (see the module docstring).

    ``iterations``: determinized simulations per decision; ``time``: seconds per decision
    instead (overrides ``iterations``); ``c``: UCB1 exploration constant (scores lie in
    ``[0, 1]``); ``infer``: prefer determinizations that explain the opponent's refusals and
    discards; ``seed``: makes it reproducible.
    """

    name = "ismcts-py"

    @bounded(
        iterations=Integer(1, 10**9),
        time=Real(1e-6, 3600, none=True),
        c=Real(0, 1000),
        infer=Flag(),
    )
    def __init__(
        self,
        iterations: int = DEFAULT_ITERATIONS,
        time: float | None = None,
        c: float = DEFAULT_C,
        infer: bool = True,
        seed: int | None = None,
    ):
        self.iterations = iterations
        self.time = None if time is None else float(time)
        self.c = float(c)
        self.infer = infer
        self.seed = seed
        self.rng = random.Random(seed)
        self._melder = GreedyAgent()  # the bot's own meld phases follow the greedy plan
        #: iterations and root statistics ``{action: (visits, mean score)}`` of the last search
        self.last_iterations = 0
        self.last_stats: dict[int, tuple[int, float]] = {}

    def clear_last(self) -> None:
        self.last_iterations = 0

    # ------------------------------------------------------------ search
    def search(self, view: PlayerView) -> int:
        """Search from the current decision of ``view``'s player and return the action to play."""
        root: dict[int, _Edge] = {}
        me = view.player
        rng = self.rng
        root_actions = greedy_first_actions(view)
        evidence = opponent_evidence(view) if self.infer else None
        started = _time.perf_counter()
        deadline = None if self.time is None else started + self.time
        n = 0
        while n < self.iterations if deadline is None else (n == 0 or _time.perf_counter() < deadline):
            path, state = self._select(root, root_actions, self._determinize(view, evidence, rng), me)
            if state.phase != GAME_OVER:
                greedy_rollout(state, rng)
            winner = state.winner
            mine = DRAW_SCORE if winner < 0 else (1.0 if winner == me else 0.0)
            for edge, p in path:
                edge.score += mine if p == me else 1.0 - mine
            n += 1
        self.last_iterations = n
        self.last_stats = {a: (e.visits, e.score / e.visits if e.visits else 0.0) for a, e in root.items()}
        rank = {a: i for i, a in enumerate(root_actions)}
        return max(root_actions, key=lambda a: (root[a].visits, root[a].score, -rank[a]))

    def _determinize(self, view: PlayerView, evidence: Evidence | None, rng: random.Random) -> GameState:
        """A determinization (:func:`plausible_determinization`); tests override it."""
        return plausible_determinization(view, evidence, rng)

    def _select(
        self, root: dict[int, _Edge], root_actions: list[int], state: GameState, me: int
    ) -> tuple[list[tuple[_Edge, int]], GameState]:
        """Selection and expansion of one ISMCTS iteration on the determinization ``state``.

        Returns the path (edges and the player who chose each) and the leaf state to roll
        out.  Each edge's visit is counted now and its score at the backup, after the playout.
        """
        node: dict[int, _Edge] | None = root
        path: list[tuple[_Edge, int]] = []
        c = self.c
        depth = 0
        while node is not None and state.phase != GAME_OVER:
            p = state.player
            legal = root_actions if depth == 0 else state.legal_actions()
            depth += 1
            untried = []
            for a in legal:
                edge = node.get(a)
                if edge is None:
                    edge = node[a] = _Edge()
                edge.avail += 1
                if edge.visits == 0:
                    untried.append(a)
            if untried:
                action = untried[0]
                if depth > 1 and len(untried) > 1:
                    preferred = _greedy_decision(state)
                    if preferred in untried:
                        action = preferred
            else:
                action, best = legal[0], -1.0
                for a in legal:
                    edge = node[a]
                    ucb = edge.score / edge.visits + c * math.sqrt(math.log(edge.avail) / edge.visits)
                    if ucb > best:
                        action, best = a, ucb
            edge = node[action]
            edge.visits += 1
            path.append((edge, p))
            state.apply(action)
            advance_to_decision(state)
            if untried:
                break
            key = (state.face_up, state.melds[0], state.melds[1], state.phase, state.player)
            node = edge.children.get(key)
            if node is None:
                node = edge.children[key] = {}
        return path, state


def greedy_playouts(states: list[GameState], games=None) -> tuple[object, list[int]]:
    """Play every state to its end with the greedy rules for both players, all at once on
    the batched engine (compiled greedy, the same moves as :func:`greedy_rollout`).

    Returns the engine used (pass it back in to reuse its arrays) and the winners (-1: draw).
    The states are not changed.
    """
    from conquian_env.kernels import PHASE, WINNER
    from conquian_env.vector import VectorGame

    from ..greedy.greedy_kernels import greedy_actions

    if games is None or games.num_games < len(states):
        games = VectorGame(max(1, len(states)), observations=False, parallel=False)
    for j, state in enumerate(states):
        games.set_game(j, state)
    n = len(states)
    table = games.state
    acts = np.full(games.num_games, -1, dtype=np.int64)
    where = np.zeros(games.num_games, dtype=bool)
    while True:
        where[:n] = table[:n, PHASE] != GAME_OVER
        rows = np.flatnonzero(where)
        if not len(rows):
            break
        acts[:] = -1
        acts[rows] = greedy_actions(games, rows)
        games.step(acts, where, autoreset=False, observe=False)
    return games, [int(w) for w in table[:n, WINNER]]


def advance_to_decision(state: GameState) -> None:
    """Play the moves that are not searched: meld phases (greedy plan) and single choices."""
    while state.phase != GAME_OVER:
        if state.phase == MELD:
            _play_meld(state, _greedy_lay(state))
            continue
        mask = state.legal_action_mask()
        if mask & (mask - 1):
            return
        state.apply(mask.bit_length() - 1)
