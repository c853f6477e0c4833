"""The training recipes: every module of this sub-package is one, and declares a :class:`Recipe` as ``RECIPE``.

``conquian-train NAME ...`` (and ``python train.py NAME ...``) runs the recipe of the module
``conquian_train.recipes.NAME``; a new recipe is one module here whose ``RECIPE`` names it, plus its
docs (docs/development.md, "A training recipe").  The library the recipes share (run folders,
shards and their lock, the fits, the evaluator, the settings) is the rest of :mod:`conquian_train`,
which imports no recipe.  Every recipe works in run folders of :mod:`conquian_train.run`, in one
of two shapes: :func:`run_recipe`, a run with ``--resume`` (the config read from the flags or,
with ``--resume``, from the run's ``config.json``, checked, written, and the run done under the
folder's lock), or :func:`steps_main`, a recipe of steps that the same command resumes (each
step's folder claimed under its lock).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conquian_arena import knobs

from ..run import one_line_errors, run_command

#: a recipe's run at a tiny size: ``quick(root, workers)`` gives its steps in order, each as (the run
#: folder it writes, the command's arguments after the recipe's name, the arguments that continue it:
#: ``--resume FOLDER``, or the same for a step), every folder under ``root`` and ``workers`` processes
#: where the recipe takes them
QuickRun = Callable[[Path, int], list[tuple[Path, list[str], list[str]]]]


@dataclass(frozen=True)
class Recipe:
    """One training recipe: its command-line name (its module's name), a line saying what it trains,
    the dataclasses of knobs its command reads, ``main(argv, prog)``, the command (an exit status),
    and ``quick`` (:data:`QuickRun`), the recipe at a tiny size that CI runs and the run-folder
    tests take (every recipe declares one)."""

    name: str
    summary: str
    configs: tuple[type, ...]
    main: Callable[[list[str], str], int]
    quick: QuickRun | None = None


def names() -> list[str]:
    """The recipes, in order: the modules of this sub-package (listed, not imported)."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__))


def find(name: str) -> Recipe:
    """The recipe called ``name``, or a ``ValueError`` naming the recipes there are."""
    if name not in names():
        raise ValueError(f"unknown recipe {name!r}; recipes: {', '.join(names())}")
    recipe = getattr(importlib.import_module(f"{__package__}.{name}"), "RECIPE", None)
    if not isinstance(recipe, Recipe) or recipe.name != name:
        raise ValueError(f"{__name__}.{name}.RECIPE must be a Recipe named {name!r} (a recipe is named after "
                         f"its module), got {recipe!r}")  # fmt: skip
    return recipe


def every() -> list[Recipe | str]:
    """Every recipe of the package; a recipe whose module cannot be imported (an optional dependency
    missing) as a line saying so."""
    found: list[Recipe | str] = []
    for name in names():
        try:
            found.append(find(name))
        except ImportError as err:
            found.append(f"{name}: cannot be loaded here ({err})")
    return found


def steps_main(
    argv: list[str] | None,
    prog: str,
    description: str,
    steps: dict[str, tuple[str, type, Callable[[Any], Any]]],
) -> int:
    """The command of a recipe made of steps (``generate``, then ``fit``): ``steps`` maps each
    sub-command to its help, its knobs' dataclass and the function that runs it on the knobs (each
    works in its folder claimed under the lock: :func:`conquian_train.run.claimed_folder`), and the
    same command resumes; a bad knob or file, a folder in use, a full disk and Ctrl-C end with one
    line (:func:`conquian_train.run.one_line_errors`)."""
    made = argparse.ArgumentParser(prog=prog, description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = made.add_subparsers(dest="command", required=True)
    for name, (help_, config, _) in steps.items():
        knobs.add_flags(sub.add_parser(name, help=help_), config)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = vars(made.parse_args(argv))
    _, config, run = steps[args.pop("command")]
    out = args.get("out", config().out)
    again = " ".join([prog, *(shlex.quote(a) for a in argv)])
    return one_line_errors(lambda: run(knobs.from_dict(config, args)), out, again, catch=(ValueError,))


def steps_recipe(
    name: str,
    summary: str,
    description: str,
    steps: dict[str, tuple[str, type, Callable[[Any], Any]]],
    quick: QuickRun | None = None,
) -> Recipe:
    """The :class:`Recipe` of a recipe made of ``steps`` (:func:`steps_main`'s): its knobs are each
    step's, its command ``conquian-train NAME STEP ...``; ``quick``: its tiny run."""

    def main(argv: list[str] | None = None, prog: str = f"conquian-train {name}") -> int:
        return steps_main(argv, prog, description, steps)

    return Recipe(name, summary, tuple(config for _, config, _ in steps.values()), main, quick)


def parser(prog: str, description: str, config: type, **kw: Any) -> argparse.ArgumentParser:
    """A recipe's command line: ``--resume``, ``--trust-code`` and one flag per knob of ``config``."""
    made = argparse.ArgumentParser(prog=prog, description=description, **kw)
    knobs.add_resume_flags(made)
    return knobs.add_flags(made, config)


def config_from_args(cls: type, args: dict[str, Any], may_change: tuple[str, ...]) -> tuple[Any, bool]:
    """The run's config from parsed flags (``--resume``: from the run's ``config.json``, checked, its
    ``python:`` specs refused without ``--trust-code``; only ``may_change`` may be given) and whether
    it is resumed.  ``ValueError`` on a bad value."""
    args = dict(args)
    resume, trust_code = args.pop("resume", None), args.pop("trust_code", False)
    if not resume:
        return knobs.from_dict(cls, args), False
    return knobs.resumed(cls, resume, args, may_change, trust_code=trust_code), True


def run_recipe(
    cls: type,
    args: dict[str, Any],
    may_change: tuple[str, ...],
    run: Callable[[Any, bool], Any],
    *,
    holds_run: Callable[[Path], bool],
    prog: str,
) -> int:
    """A recipe's run from its parsed flags: the config (:func:`config_from_args`) validated, then
    ``run(config, resume)`` in the run folder (:func:`conquian_train.run.run_command`); an exit status."""
    try:
        config, resume = config_from_args(cls, args, may_change)
        config.validate()
        if not resume and hasattr(config, "validate_new_run"):
            config.validate_new_run()  # what only a new run must meet (a resume keeps its recipe)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    command = f"{'python ' if prog.startswith('train.py') else ''}{prog} --resume"
    return run_command(config.out, knobs.to_dict(config), resume, lambda: run(config, resume),
                       holds_run=holds_run, command=command)  # fmt: skip
