"""Flat Monte Carlo with paired greedy rollouts: one step of policy improvement over greedy.

``RolloutAgent`` answers each take/refuse, discard and force decision like this:

1. Draw ``samples`` determinizations of the hidden cards (the opponent's hand and the
   stock), each the most plausible of a few draws given the opponent's refusals and
   discards (as :class:`agents.search.ismcts.ISMCTSAgent` does with ``infer``).
2. On every determinization, play **each** legal action and then the greedy rules for
   both players to the end of the game.  The greedy rules are deterministic, so the
   actions are compared on exactly the same cards: common random numbers, which makes a
   few dozen samples enough to tell close actions apart.
3. Play the action with the best mean score (win 1, draw 1/2, loss 0); ties go to the
   greedy rules' own choice.  With ``margin`` > 0 it leaves the greedy choice only when
   the best action's paired mean gain over it is at least ``margin`` standard errors
   (a conservative improvement: no move on noise alone).

This is the classic *rollout algorithm* (Bertsekas; Tesauro & Galperin 1996 for
backgammon): with the base policy as the model of both players it improves on the base
policy wherever the samples can see a difference, and against the greedy bot itself the
model of the opponent is exact (up to the hidden cards).  Meld phases follow the greedy
plan.  It never reads hidden cards: only ``view.determinize``.

With ``batch`` on, all the rollouts of a decision run together on the batched engine
(:func:`agents.search.ismcts.greedy_playouts`, compiled greedy: the same games, much less time).

Spec: ``rollout[:samples=32,margin=0,infer=true,batch=false]``.
"""

from __future__ import annotations

import random

import numpy as np

from conquian_env.game import GAME_OVER

from ..base import PlayerView
from ..catalog import bot
from ..greedy.greedy import GreedyAgent
from ..params import Flag, Integer, Real, bounded
from .frame import SearchBot
from .ismcts import (
    DRAW_SCORE,
    advance_to_decision,
    greedy_first_actions,
    greedy_playouts,
    greedy_rollout,
    opponent_evidence,
    plausible_determinization,
)

DEFAULT_SAMPLES = 32


@bot(
    "rollout",
    "flat Monte Carlo: every legal action scored by paired greedy rollouts on sampled deals",
    params={
        "samples": "determinizations per decision (each action is rolled out on each)",
        "margin": "leave the greedy choice only for a paired gain of this many standard errors",
        "infer": "prefer deals that explain the opponent's refusals and discards",
        "batch": "run the rollouts together on the batched engine (needs numba; same games, faster)",
    },
)
class RolloutAgent(SearchBot):
    """Flat Monte Carlo over determinizations with paired greedy rollouts (module docstring)."""

    name = "rollout"

    @bounded(samples=Integer(1, 10**6), margin=Real(0, 1000), infer=Flag(), batch=Flag())
    def __init__(
        self,
        samples: int = DEFAULT_SAMPLES,
        margin: float = 0.0,
        infer: bool = True,
        batch: bool = False,
        seed: int | None = None,
    ):
        self.margin = float(margin)
        self.batch = batch
        self._games = None
        self.samples = samples
        self.infer = infer
        self.seed = seed
        self.rng = random.Random(seed)
        self._melder = GreedyAgent()
        #: mean score of each legal action in the last decision (empty when it was not searched)
        self.last_scores: dict[int, float] = {}

    def clear_last(self) -> None:
        self.last_scores = {}

    def search(self, view: PlayerView) -> int:
        """Score every legal action by paired greedy rollouts (module docstring)."""
        actions = greedy_first_actions(view)  # the greedy choice first
        evidence = opponent_evidence(view) if self.infer else None
        me = view.player
        scores = np.empty((self.samples, len(actions)))
        pending: list = []
        for k in range(self.samples):
            det = plausible_determinization(view, evidence, self.rng)
            for i, a in enumerate(actions):
                state = det.clone()
                state.apply(a)
                advance_to_decision(state)
                if self.batch:
                    pending.append(state)
                    continue
                if state.phase != GAME_OVER:
                    greedy_rollout(state, self.rng)
                w = state.winner
                scores[k, i] = DRAW_SCORE if w < 0 else (1.0 if w == me else 0.0)
        if self.batch:
            self._games, winners = greedy_playouts(pending, self._games)
            w = np.array(winners).reshape(self.samples, len(actions))
            scores[:] = np.where(w < 0, DRAW_SCORE, (w == me).astype(float))
        means = scores.mean(axis=0)
        self.last_scores = {a: float(m) for a, m in zip(actions, means, strict=True)}
        best = max(range(len(actions)), key=lambda i: (means[i], -i))
        if best and self.margin:
            gain = scores[:, best] - scores[:, 0]  # paired with the greedy choice
            se = gain.std(ddof=1) / np.sqrt(self.samples) if self.samples > 1 else 0.0
            if gain.mean() < self.margin * se or gain.mean() <= 0:
                best = 0
        return actions[best]
