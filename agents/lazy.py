"""A package's names imported from its modules on first use (the lazy-loader pattern of SciPy and
scikit-image), so that importing a family of bots imports none of its modules until one of its
names is used: importing the tree search does not compile the flat search's kernels, importing
the PPO bot's family imports neither torch nor ray.

A family's ``__init__.py``::

    from ..lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"GreedyAgent": "greedy"})

``agents.greedy.GreedyAgent`` then imports :mod:`agents.greedy.greedy` and returns its
``GreedyAgent``; ``dir(agents.greedy)`` lists it; any other missing name raises an
``AttributeError`` that names the package and the names it has.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) that
    export each name of ``homes`` (public name -> the module of the package that defines it,
    relative: ``"greedy"`` for ``package.greedy``), importing that module on first use."""
    homes = dict(homes)

    def attribute(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r} (it has: {', '.join(sorted(homes))})")

    def names() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return attribute, names
