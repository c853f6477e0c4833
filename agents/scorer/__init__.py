"""The action scorer's family: the bot and its model reader (:mod:`agents.scorer.scorer`), the
``"meld"`` features it scores from (:mod:`agents.scorer.features`), its compiled twin
(:mod:`agents.scorer.scorer_kernels`) and its compiled whole games
(:mod:`agents.scorer.selfplay_kernels`, what its training plays).

>>> from agents.scorer import ScorerAgent

The names below are imported from their module on first use, so that importing the features
does not import the bot."""

from __future__ import annotations

from ..lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {"scorer": ["ScorerAgent", "ActionScorer", "load_scorer"]})
