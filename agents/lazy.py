"""A package's names imported from its modules on first use (the lazy-loader pattern of SciPy and
scikit-image), so that importing a family of bots imports none of its modules until one of its
names is used: importing the tree search does not compile the flat search's kernels, importing
the PPO bot's family imports neither torch nor ray.  The table is lazy_loader's ``submod_attrs``:
each module of the package with the names it gives.

A family's ``__init__.py``::

    from ..lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"greedy": ["GreedyAgent"]})

``agents.greedy.GreedyAgent`` then imports :mod:`agents.greedy.greedy` and returns its
``GreedyAgent``; ``dir(agents.greedy)`` lists it; any other missing name raises an
``AttributeError`` that names the package and the names it has.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, modules: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) that give,
    for each module of ``modules`` (named relative to the package: ``"greedy"`` is
    ``package.greedy``), the names listed with it, importing that module on first use."""
    homes = {name: module for module, names in modules.items() for name in names}

    def attribute(name: str) -> Any:
        if name in homes:
            return getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r} (it has: {', '.join(sorted(homes))})")

    def listing() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return attribute, listing
