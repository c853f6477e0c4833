"""The allowed values of a bot's parameters, declared on its constructor and checked when it is built.

::

    class MyBot(Agent):
        @bounded(samples=Integer(1, 10**6), margin=Real(0, 1000), infer=Flag())
        def __init__(self, samples: int = 32, margin: float = 0.0, infer: bool = True, seed=None): ...

:func:`bounded` checks every declared argument the constructor is given, from a bot spec
(``make_agent("mybot:samples=0")`` is a :class:`~agents.registry.SpecError`) or from Python
(``MyBot(samples=np.int64(8))`` works: numpy scalars become Python numbers), before the
constructor's body runs: a bot that builds never meets a parameter it cannot use in a game.
A refused value raises :class:`ParamError` (a ``ValueError``) naming the parameter, the value
and what is allowed.  ``docs/bots.md`` lists the ranges of the shipped bots.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class ParamError(ValueError):
    """A bot parameter outside its declared range (or of the wrong type)."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class _Range:
    """A number in ``[low, high]`` (``none``: ``None`` is allowed too), checked by the subclass's
    :meth:`fits` and made a Python number by its :meth:`convert`."""

    low: Any
    high: Any
    none: bool = False

    def allowed(self) -> str:
        raise NotImplementedError

    def fits(self, value: Any) -> bool:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def check(self, name: str, value: Any) -> Any:
        if value is None and self.none:
            return None
        if not self.fits(value):
            raise ParamError(f"{name} must be {self.allowed()}, got {_shown(value)}")
        return self.convert(value)


class Integer(_Range):
    """A whole number in ``[low, high]`` (``none``: ``None`` is allowed too); a bool is not one."""

    def allowed(self) -> str:
        return f"an integer in [{self.low}, {self.high}]" + (" or none" if self.none else "")

    def fits(self, value: Any) -> bool:
        whole = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        return whole and self.low <= value <= self.high

    def convert(self, value: Any) -> int:
        return int(value)


class Real(_Range):
    """A finite number in ``[low, high]`` (an integer is one too; NaN and infinities are not)."""

    def allowed(self) -> str:
        return f"a number in [{self.low:g}, {self.high:g}]" + (" or none" if self.none else "")

    def fits(self, value: Any) -> bool:
        ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        return ok and math.isfinite(value) and self.low <= value <= self.high

    def convert(self, value: Any) -> float:
        return float(value)


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false`` (a Python or numpy bool; not a number)."""

    def allowed(self) -> str:
        return "true or false"

    def check(self, name: str, value: Any) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise ParamError(f"{name} must be true or false, got {_shown(value)}")
        return bool(value)


@dataclass(frozen=True)
class Choice:
    """One of the given strings."""

    options: tuple[str, ...]

    def allowed(self) -> str:
        return "one of " + ", ".join(self.options)

    def check(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or value not in self.options:
            raise ParamError(f"{name} must be {self.allowed()}, got {_shown(value)}")
        return value


Bound = Integer | Real | Flag | Choice


def bounded(**bounds: Bound) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a bot's ``__init__``: each named argument, when given, is checked against its
    bound (and numpy scalars made Python numbers) before the constructor runs."""

    def decorate(init: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(init)
        missing = sorted(set(bounds) - set(signature.parameters))
        if missing:
            raise TypeError(f"{init.__qualname__} has no parameter(s) {missing} to bound")

        @functools.wraps(init)
        def checked(*args: Any, **kwargs: Any) -> None:
            call = signature.bind(*args, **kwargs)
            for name, bound in bounds.items():
                if name in call.arguments:
                    call.arguments[name] = bound.check(name, call.arguments[name])
            init(*call.args, **call.kwargs)

        checked.bounds = dict(bounds)  # type: ignore[attr-defined]
        return checked

    return decorate


def bounds_of(cls: type) -> dict[str, Bound]:
    """The bounds declared on ``cls``'s constructor (and its bases', the nearest winning)."""
    found: dict[str, Bound] = {}
    for klass in reversed(cls.__mro__):
        found.update(getattr(klass.__dict__.get("__init__"), "bounds", {}))
    return found


__all__ = ["Bound", "Choice", "Flag", "Integer", "ParamError", "Real", "bounded", "bounds_of"]
