"""The optional dependencies, and the one error that says which is missing and how to install it.

Every optional package (numba, torch, scipy, matplotlib, tqdm, Flask, Ray, Tianshou, OpenSpiel,
JAX, AgileRL, Stable-Baselines3) is imported where it is used, and a missing one is told the same
way everywhere: a :class:`MissingExtraError` (an ``ImportError``) whose message is one line naming what
the user asked for (a bot spec, a module, a command-line flag), the package that is missing and
its install line::

    bot spec 'search' needs numba, the 'fast' extra: pip install 'conquian-env[fast]'

An import site wraps its optional imports::

    try:
        import numba
    except ImportError as err:
        raise extras.missing(err, "conquian_env.vector") from None

:func:`missing` turns the error into a :class:`MissingExtraError` only when the module that could not
be found is one of :data:`PACKAGES`; any other error (a broken install, a bug) comes back as it
was, to be raised with its own traceback.  :func:`require` imports a module or raises the same.
The command-line tools print a :class:`MissingExtraError` as its one line, without a traceback,
and so do the examples (:func:`one_line`).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

#: torch has no extra of its own (each extra would pull a different build): its CPU build
TORCH_INSTALL = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


@dataclass(frozen=True)
class Package:
    """An optional package: its name as pip knows it, and the extra that installs it (None: torch)."""

    name: str
    extra: str | None

    def install(self, extra: str | None = None) -> str:
        """The install line: the extra's (``pip install 'conquian-env[fast]'``), or torch's own."""
        extra = extra or self.extra
        return f"pip install 'conquian-env[{extra}]'" if extra else TORCH_INSTALL


#: top-level module name -> the package and its default extra (a caller may name another, as
#: RLlib's ``rllib`` for ``ray``)
PACKAGES: dict[str, Package] = {
    "numba": Package("numba", "fast"),
    "torch": Package("torch", None),
    "scipy": Package("scipy", "eval"),
    "matplotlib": Package("matplotlib", "eval"),
    "tqdm": Package("tqdm", "eval"),
    "flask": Package("Flask", "web"),
    "ray": Package("Ray", "ray"),
    "tianshou": Package("Tianshou", "tianshou"),
    "pyspiel": Package("OpenSpiel", "openspiel"),
    "open_spiel": Package("OpenSpiel", "openspiel"),
    "jax": Package("JAX", "jax"),
    "jaxlib": Package("JAX", "jax"),
    "pgx": Package("Pgx", "jax"),
    "optax": Package("optax", "jax"),
    "agilerl": Package("AgileRL", "agilerl"),
    "peft": Package("peft", "agilerl"),
    "stable_baselines3": Package("Stable-Baselines3", "train"),
    "sb3_contrib": Package("sb3-contrib", "train"),
    "tensorboard": Package("TensorBoard", "train"),
    "tensordict": Package("tensordict", "agilerl"),
}

#: extras whose libraries pull torch in: install the CPU build first (their own pick may be a CUDA one)
TORCH_FIRST = frozenset({"train", "rllib", "tianshou", "agilerl"})


class MissingExtraError(ImportError):
    """An optional package is not installed: ``asked`` (what the user asked for: ``"bot spec
    'search'"``, ``"conquian_env.vector"``) needs ``module``.  The message is one line with the
    install line; ``instead`` adds what works without it.  ``typed``: ``asked`` is what the user typed
    (a bot spec, a flag), which a command line keeps (:func:`for_command`); otherwise it is the module
    that needs the package, and a command line names itself instead."""

    def __init__(self, module: str, asked: str, extra: str | None = None, instead: str = "", typed: bool = False):
        self.module, self.asked, self.instead, self.typed = module, asked, instead, typed
        package = PACKAGES[module]
        self.extra = package.extra and (extra or package.extra)  # torch has no extra, whoever asks
        super().__init__(self.line(), name=module)

    def line(self) -> str:
        package = PACKAGES[self.module]
        if self.extra is None:
            how = f"{package.name}: {package.install()}"
        else:
            how = f"{package.name}, the '{self.extra}' extra: {package.install(self.extra)}"
            if self.extra in TORCH_FIRST:
                how += f" (a CPU torch first: {TORCH_INSTALL})"
        return f"{self.asked} needs {how}" + (f" ({self.instead})" if self.instead else "")


def missing_module(err: BaseException) -> str | None:
    """The optional package (a key of :data:`PACKAGES`) whose absence ``err`` reports, or None."""
    if isinstance(err, MissingExtraError):
        return err.module
    if not isinstance(err, ModuleNotFoundError) or not err.name:
        return None
    top = err.name.split(".")[0]
    return top if top in PACKAGES else None


def missing(
    err: ImportError, asked: str, extra: str | None = None, instead: str = "", typed: bool = False
) -> ImportError:
    """``err`` as a :class:`MissingExtraError` for ``asked`` when it reports a missing optional package
    (one already told is told again for ``asked``); otherwise ``err`` itself (raise it: a module of
    ours missing, or a package that is installed but fails to import, is no missing extra)."""
    if isinstance(err, MissingExtraError):
        return MissingExtraError(err.module, asked, extra or err.extra, instead or err.instead, typed)
    module = missing_module(err)
    return err if module is None else MissingExtraError(module, asked, extra, instead, typed)


def require(module: str, asked: str, extra: str | None = None, typed: bool = False) -> ModuleType:
    """Import ``module`` (``"flask"``, ``"ray.rllib"``) or raise the :class:`MissingExtraError` for ``asked``."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise missing(err, asked, extra, typed=typed) from None


def for_command(err: ImportError, command: str, extra: str | None = None) -> ImportError:
    """What a command line prints for ``err``: a :class:`MissingExtraError` for what the user typed (a
    bot spec, a flag) as it is, any other missing optional package as one that ``command`` needs;
    otherwise ``err`` itself (raise it).  ``extra``: the extra that ``command`` installs a package with."""
    return err if isinstance(err, MissingExtraError) and err.typed else missing(err, command, extra)


@contextlib.contextmanager
def one_line(command: str, extra: str | None = None) -> Iterator[None]:
    """For a script's ``__main__``: a missing optional package inside the block exits with its one
    line on standard error (status 1), naming ``command`` unless the user typed what needs it; any
    other error passes as it is, with its traceback.  ``with one_line("examples/jax_ppo.py"): main()``"""
    try:
        yield
    except ImportError as err:
        told = for_command(err, command, extra)
        if not isinstance(told, MissingExtraError):
            raise
        raise SystemExit(f"error: {told}") from None
