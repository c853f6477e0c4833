"""A dataclass of knobs as a command line: each field's help text is its ``--flag``'s help."""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import field
from pathlib import Path
from typing import Any


def knob(default: Any, help: str, **metadata: Any) -> Any:  # noqa: A002 - the field's help text
    """A dataclass field with its help text (lists, tuples and dicts get a factory)."""
    if isinstance(default, (list, tuple, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **metadata})
    return field(default=default, metadata={"help": help, **metadata})


def add_flags(parser: argparse.ArgumentParser, cls: type) -> argparse.ArgumentParser:
    """One ``--flag`` per field of the dataclass ``cls`` (an unset flag is absent from the namespace)."""
    defaults = cls()
    for f in dataclasses.fields(cls):
        flag, default = "--" + f.name.replace("_", "-"), getattr(defaults, f.name)
        kw: dict[str, Any] = {"help": f.metadata["help"] + f" (default: {default!r})", "default": argparse.SUPPRESS}
        if isinstance(default, bool) or f.type == "bool | None":
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", type=type(default[0]) if default else str, metavar="X", **kw)
        else:
            parser.add_argument(flag, type=type(default), **kw)
    return parser


def to_dict(config: Any) -> dict[str, Any]:
    """The fields of a knob dataclass as JSON-ready data (tuples as lists)."""
    return {
        f.name: list(v) if isinstance(v := getattr(config, f.name), tuple) else v for f in dataclasses.fields(config)
    }


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """The knob dataclass ``cls`` from :func:`to_dict`'s data; an unknown key is an error naming the known ones."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown config keys {unknown}; known: {sorted(names)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def resumed(cls: type, run_dir: str | Path, given: dict[str, Any], may_change: tuple[str, ...]) -> Any:
    """The knobs of the run in ``run_dir`` (its ``config.json``) with the command line's ``given``
    flags on top; only ``may_change`` may be given (the rest of a run's recipe is fixed)."""
    path = Path(run_dir) / "config.json"
    if not path.exists():
        raise ValueError(f"--resume {run_dir}: no config.json there (not a run folder)")
    extra = sorted(set(given) - set(may_change))
    if extra:
        flags = ", ".join("--" + k.replace("_", "-") for k in may_change)
        raise ValueError(f"--resume takes its config from {path}; only {flags} may change, got {extra}")
    return from_dict(cls, {**json.loads(path.read_text()), **given, "out": str(run_dir)})
