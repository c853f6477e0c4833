"""The action scorer's family: the bot and its model reader (:mod:`agents.scorer.scorer`), the
``"meld"`` features it scores from (:mod:`agents.scorer.features`), its compiled twin
(:mod:`agents.scorer.scorer_kernels`) and its compiled whole games
(:mod:`agents.scorer.selfplay_kernels`, what its training plays).

>>> from agents.scorer import ScorerAgent

The names below are imported from their module on first use, so that importing the features
does not import the bot."""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_HOME = {
    "ScorerAgent": "scorer",
    "ActionScorer": "scorer",
    "load_scorer": "scorer",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
