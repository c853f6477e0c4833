"""The greedy bot's family: the bot in Python (:mod:`agents.greedy.greedy`), its compiled twin
(:mod:`agents.greedy.greedy_kernels`, numba), its JAX twin (:mod:`agents.greedy.greedy_jax`) and
the weights all three read (:mod:`agents.greedy.greedy_weights`).

>>> from agents.greedy import GreedyAgent

The names below are imported from their module on first use, so that importing one twin
imports neither of the others."""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> the module of this package that defines it
_HOME = {
    "GreedyAgent": "greedy",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
