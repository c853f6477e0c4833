"""A dataclass of knobs as a command line and a run's ``config.json``, each value checked: the one
builder of every command's flags (the training recipes' and ``conquian-evaluate``'s).

Each field is a :func:`knob`: its help text is its ``--flag``'s help, and it may declare the
values it allows (``low``/``high``/``above``/``below`` for numbers, ``choices`` for text), whether it
holds bot specs (``spec=True``), and how the command line takes it (``positional``, ``flags``,
``metavar``, ``type``, ``nargs``/``const``, ``rules=True`` for a :class:`~conquian_env.rules.Rules`
field).  :func:`add_flags` builds the flags; :func:`check` holds every field to its type (from
the dataclass annotations) and declared range, so a new run's flags, a resumed run's
``config.json`` and a config built in Python are checked alike; :func:`resumed` reads a run's
``config.json`` strictly and refuses its ``python:`` bot specs, which would import and run a
module, unless the user passes ``--trust-code`` (docs/training.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import types
import typing
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np

from agents.model_files import strict_loads
from agents.registry import refuse_code
from conquian_arena import runfiles
from conquian_env.rules import Rules
from conquian_env.rules import add_arguments as rule_arguments

#: what a whole-number knob holds at most (numpy's and torch's int64)
INT_LIMIT = 2**63


def knob(  # noqa: A002 - the field's help text
    default: Any,
    help: str,  # noqa: A002
    *,
    low: float | None = None,
    high: float | None = None,
    above: float | None = None,
    below: float | None = None,
    choices: tuple[str, ...] | None = None,
    spec: bool = False,
    positional: bool = False,
    flags: tuple[str, ...] | None = None,
    metavar: str | None = None,
    type: Any = None,  # noqa: A002 - argparse's name
    nargs: str | int | None = None,
    const: Any = None,
    rules: bool = False,
    **metadata: Any,
) -> Any:
    """A dataclass field with its help text (lists, tuples and dicts get a factory).

    What it allows: ``low``/``high``: the least and greatest number allowed; ``above``/``below``:
    numbers the value must exceed / stay under; ``choices``: the texts allowed; ``spec``: the field
    holds bot specs (``SPEC`` or ``SPEC@WEIGHT``), which a resumed run checks for code
    (:func:`resumed`); ``rules``: a :class:`~conquian_env.rules.Rules`.  For a tuple or a list the
    bounds and choices hold for each element.

    How :func:`add_flags` takes it: ``positional`` (an argument, not a flag; a list takes one or
    more), ``flags`` (its spellings, e.g. ``("-j", "--jobs")``; default ``--FIELD-NAME``),
    ``metavar``, ``type`` (what parses the text; default the default's type, which a ``None``
    default needs), ``nargs`` and ``const`` (argparse's), ``rules`` (a
    :class:`~conquian_env.rules.Rules` field: one ``--FIELD``/``--no-FIELD`` flag per rule field,
    gathered into one ``Rules``)."""
    declared = {
        "low": low, "high": high, "above": above, "below": below, "choices": choices, "spec": spec,
        "positional": positional, "flags": flags, "metavar": metavar, "type": type, "nargs": nargs, "const": const,
        "rules": rules,
    }  # fmt: skip
    meta = {"help": help, **{k: v for k, v in declared.items() if v is not None and v is not False}, **metadata}
    if isinstance(default, (list, tuple, dict)):
        return field(default_factory=lambda: default.__class__(default), metadata=meta)
    return field(default=default, metadata=meta)


def add_flags(
    parser: argparse.ArgumentParser, cls: type, *, defaults_in_namespace: bool = False
) -> argparse.ArgumentParser:
    """One ``--flag`` (or positional argument) per field of the dataclass ``cls``, as its
    :func:`knob` declares; a bool (or ``bool | None``) field gets ``--FIELD``/``--no-FIELD``.

    Two modes.  By default (the training recipes) an unset flag is absent from the namespace
    (so a resumed run tells what was given from what was not) and every help ends with the
    default (``(default: 0.0003)``).  With ``defaults_in_namespace`` (``conquian-evaluate``)
    every field's default is in the namespace, and a help names the default only where it
    tells something: not for a bool, a ``None`` or a help text that already speaks of its default."""
    defaults, hints = cls(), typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        meta, default = f.metadata, getattr(defaults, f.name)
        if meta.get("positional"):
            kw: dict[str, Any] = {"nargs": meta.get("nargs", "+" if isinstance(default, (list, tuple)) else None)}
            kw.update({k: meta[k] for k in ("type", "metavar") if k in meta})
            parser.add_argument(f.name, help=meta["help"], **kw)
            continue
        if meta.get("rules"):  # one --FIELD / --no-FIELD flag per rule field, gathered into one Rules
            rule_arguments(
                parser,
                boolean_optional=True,
                dest=f.name,
                default=default if defaults_in_namespace else argparse.SUPPRESS,
            )
            continue
        flags = meta.get("flags", ("--" + f.name.replace("_", "-"),))
        text = meta["help"]
        boolean = isinstance(default, bool) or f.type in ("bool", "bool | None")
        if not defaults_in_namespace:
            text += f" (default: {default!r})"
        elif default is not None and not boolean and "default" not in text:
            text += f" (default: {default})"
        kw = {"dest": f.name, "help": text, "default": default if defaults_in_namespace else argparse.SUPPRESS}
        if boolean:
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **kw)
            continue
        if isinstance(default, tuple):  # the element type annotated (an empty default names none)
            kw.update(nargs="+", type=typing.get_args(hints[f.name])[0], metavar="X")
        else:
            kw["type"] = default.__class__
        kw.update({k: meta[k] for k in ("type", "metavar", "nargs", "const") if k in meta})
        parser.add_argument(*flags, **kw)
    return parser


def add_resume_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--resume RUN_DIR`` and ``--trust-code`` (what :func:`resumed` takes)."""
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR (its config.json is used)")
    parser.add_argument(
        "--trust-code",
        action="store_true",
        help="with --resume: let the python: bot specs of RUN_DIR/config.json import and run their modules "
        "(refused without it: a run folder is data; pass it only for a config you trust)",
    )
    return parser


def to_dict(config: Any) -> dict[str, Any]:
    """The fields of a knob dataclass as JSON-ready data (tuples as lists, a ``Rules`` as its fields)."""
    return {f.name: _data(getattr(config, f.name)) for f in dataclasses.fields(config)}


def _data(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    return value.to_dict() if isinstance(value, Rules) else value


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """The knob dataclass ``cls`` from :func:`to_dict`'s data, :func:`check`\\ ed (a ``Rules`` field from
    its fields' object);
    an unknown key is an error naming the known ones, a value of the wrong type or range one naming
    the key, the value and what is allowed."""
    if not isinstance(data, dict):
        raise ValueError(f"a config is a JSON object of knobs, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    rules_keys = [f.name for f in dataclasses.fields(cls) if f.metadata.get("rules")]
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {sorted(names)}")
    data = {k: Rules.from_dict(v, k) if k in rules_keys and not isinstance(v, Rules) else v for k, v in data.items()}
    config = cls(**data)
    check(config)
    return config


def check(config: Any) -> None:
    """Hold every field of the knob dataclass ``config`` to its annotated type and declared range;
    tuples arrive as tuples, lists as lists and numpy scalars as Python numbers (the config is
    updated in place).  The types it knows: ``bool``, ``int``, ``float``, ``str``, ``Path`` (a
    path or a text), a ``tuple[X, ...]`` or ``list[X]`` of them, a union of them with or without
    ``None``, and ``Rules`` (a ``rules=True`` field).
    Raises ``ValueError``: ``lr must be a number > 0, got 'fast'``."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        setattr(config, f.name, _checked(f.name, getattr(config, f.name), hints[f.name], f.metadata))


def spec_fields(config: Any) -> list[tuple[str, str]]:
    """``(field, spec)`` for every bot spec the config holds (the fields declared ``spec=True``)."""
    out = []
    for f in dataclasses.fields(config):
        if f.metadata.get("spec"):
            value = getattr(config, f.name)
            out += [(f.name, v) for v in (value if isinstance(value, (tuple, list)) else (value,))]
    return out


def read_config(path: str | Path) -> dict[str, Any]:
    """A run's ``config.json``: a JSON object (no repeated key, no NaN or Infinity), or a
    ``ValueError`` naming the file and what is wrong with it."""
    path = Path(path)

    try:
        raw = runfiles.read_bytes(path)  # a regular file: never read through a link or from a FIFO
    except OSError as err:
        raise ValueError(f"{path} cannot be read: {err}") from None
    try:
        data = strict_loads(raw)
    except (ValueError, RecursionError) as err:  # bad UTF-8, bad JSON, a repeated key, NaN; absurd nesting
        raise ValueError(f"{path} is not a run's config (a JSON object of knobs): {err}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a run's config: a JSON object of knobs, got {type(data).__name__}")
    return data


def resumed(
    cls: type, run_dir: str | Path, given: dict[str, Any], may_change: tuple[str, ...], trust_code: bool = False
) -> Any:
    """The knobs of the run in ``run_dir`` (its ``config.json``) with the command line's ``given``
    flags on top; only ``may_change`` may be given (the rest of a run's recipe is fixed).

    Every value is checked (:func:`check`), and a ``python:`` bot spec of the file (which would
    import and run a module) is refused unless ``trust_code`` (``--trust-code``), and even then
    when its module lies inside ``run_dir``; all before anything is imported or built."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise ValueError(f"--resume {run_dir}: no config.json there (not a run folder)")
    extra = sorted(set(given) - set(may_change))
    if extra:
        flags = ", ".join("--" + k.replace("_", "-") for k in may_change)
        raise ValueError(f"--resume takes its config from {path}; only {flags} may change, got {extra}")
    data = read_config(path)
    try:
        config = from_dict(cls, {**data, **given, "out": str(run_dir)})
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    refuse_code(spec_fields(config), path, trust_code, run_dir)
    return config


# --------------------------------------------------------------------------- one value against its field


def _checked(name: str, value: Any, hint: Any, meta: Any) -> Any:
    """``value`` as the type ``hint`` and ``meta``'s range allow it, or a ``ValueError``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        hints = [a for a in args if a is not type(None)]
        wanted = " or ".join(_wanted(h, meta) for h in hints)
        if type(None) in args:
            wanted = f"{wanted}, or null" if hints != [bool] else "true, false or null"
        for one in hints[:-1]:  # the first type that takes it (str | Path: a text stays a text)
            try:
                return _one(name, value, one, meta, wanted)
            except ValueError:
                pass
        return _one(name, value, hints[-1], meta, wanted)
    if origin in (tuple, list):
        element = args[0]
        if not isinstance(value, (tuple, list)):
            raise ValueError(f"{name} must be a list of {_wanted(element, meta, plural=True)}, got {_shown(value)}")
        what = f"a list of {_wanted(element, meta, plural=True)}"
        return origin(_one(name, v, element, meta, what, whole=value) for v in value)
    return _one(name, value, hint, meta, _wanted(hint, meta))


def _one(name: str, value: Any, hint: Any, meta: Any, wanted: str, whole: Any = None) -> Any:
    def refuse() -> ValueError:
        return ValueError(f"{name} must be {wanted}, got {_shown(value if whole is None else whole)}")

    if hint is bool:
        if not isinstance(value, (bool, np.bool_)):
            raise refuse()
        return bool(value)
    if hint is str:
        if not isinstance(value, str) or ("choices" in meta and value not in meta["choices"]):
            raise refuse()
        return value
    if hint is Path:
        if not isinstance(value, (str, os.PathLike)):
            raise refuse()
        return value
    if hint is Rules or meta.get("rules"):
        if not isinstance(value, Rules):
            raise refuse()
        return value
    if hint in (int, float):
        number = (int, np.integer) if hint is int else (int, float, np.integer, np.floating)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, number):
            raise refuse()
        if hint is float and not math.isfinite(value):
            raise refuse()
        if hint is int and not -INT_LIMIT < value < INT_LIMIT:
            raise ValueError(f"{name} must be {wanted} below 2**63, got {_shown(value if whole is None else whole)}")
        low, high, above, below = meta.get("low"), meta.get("high"), meta.get("above"), meta.get("below")
        if (low is not None and value < low) or (high is not None and value > high):
            raise refuse()
        if (above is not None and not value > above) or (below is not None and not value < below):
            raise refuse()
        return hint(value)
    raise TypeError(f"knob {name}: no check for the type {hint!r}")  # a new knob type: teach _one it


def _wanted(hint: Any, meta: Any, plural: bool = False) -> str:
    """What a field allows, in words: ``a positive integer``, ``a number in [0, 1]``, ``'meld' or 'raw'``."""
    if hint is bool:
        return "true or false"
    if hint is Path:
        return "paths" if plural else "a path"
    if hint is Rules or meta.get("rules"):
        return "conquian_env.rules.Rules" if plural else "a conquian_env.rules.Rules"
    if hint is str:
        if "choices" in meta:
            options = [repr(c) for c in meta["choices"]]
            return " or ".join(options) if len(options) < 3 else ", ".join(options[:-1]) + " or " + options[-1]
        if meta.get("spec"):
            return "bot specs" if plural else "a bot spec"
        return "texts" if plural else "a text"
    noun = ("integers" if plural else "integer") if hint is int else ("numbers" if plural else "number")
    article = "" if plural else ("an " if hint is int else "a ")
    low, high, above, below = meta.get("low"), meta.get("high"), meta.get("above"), meta.get("below")
    if hint is int and low in (0, 1) and below is None:
        most = "" if high is None else f" up to {_number(high)}"
        return f"{'' if plural else 'a '}{'positive' if low else 'non-negative'} {noun}{most}"
    least = f"[{_number(low)}" if low is not None else None if above is None else f"({_number(above)}"
    most = f"{_number(high)}]" if high is not None else None if below is None else f"{_number(below)})"
    if least is not None and most is not None:
        return f"{article}{noun} in {least}, {most}"
    if least is not None:
        return f"{article}{noun} {'>=' if low is not None else '>'} {least[1:]}"
    if most is not None:
        return f"{article}{noun} {'<=' if high is not None else '<'} {most[:-1]}"
    return f"{article}finite {noun}" if hint is float else f"{article}{noun}"


def _number(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
