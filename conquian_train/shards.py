"""The shards of the recipes made of two steps (``generate``, then ``fit``: the belief's, the value's
and the distilled scorer's): a folder of ``config.json`` and ``shards/s{k:05d}.npz``, one process at
a time, each shard complete or absent, and read back only when it is the shard it says it is.

- :func:`generate_shards` makes the missing shards of a folder under its lock
  (:func:`conquian_train.run.claimed_folder`, the run folders' own: a second ``generate`` on the
  folder stops with one line naming the holder; the folder's knobs claimed in ``config.json`` first),
  every shard written atomically with the settings that made it and its index in its ``meta``.
- :func:`folder_shards` reads a folder's ``config.json`` strictly (:func:`conquian_arena.knobs.read_config`,
  every knob's type and declared range) and lists its shards: one missing, or one the config does
  not make (an edited ``games``), is refused by name.
- :func:`open_shard` reads one shard (no pickles; exactly the named arrays, each dtype and shape
  checked; a strict JSON ``meta``): a shard that is not a readable archive (truncated, corrupt) is
  set aside as ``NAME.bad`` (the next ``generate`` makes it again) and named in a
  :class:`ShardError` (one the system cannot read, an ``OSError``, is left in place and named);
  one made by other settings or for another index (another run's, two swapped) is refused by name.
"""

from __future__ import annotations

import json
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.model_files import ModelFileError, parse_json
from conquian_arena import knobs
from conquian_arena.runfiles import check_entry, remove_partials, set_aside, write_atomic
from conquian_env.rules import STANDARD

from .run import claimed_folder

#: the most shards a folder may have (``ceil(games / chunk)``)
MAX_SHARDS = 100_000
#: the knobs that say where and how a folder's shards are made, not what they hold
WHERE_KNOBS = ("ray", "out")


class ShardError(ValueError):
    """A shard or a shard folder that cannot be used; the message names the file and what is wrong."""


def shard_path(out: str | Path, k: int) -> Path:
    """The path of shard ``k`` of the folder ``out``."""
    return Path(out) / "shards" / f"s{k:05d}.npz"


def shard_count(config: Any) -> int:
    """How many shards ``config`` (knobs with ``games`` and ``chunk``) makes; a ``ValueError`` past
    :data:`MAX_SHARDS`."""
    n = -(-config.games // config.chunk)
    if n > MAX_SHARDS:
        raise ValueError(f"games {config.games} in chunks of {config.chunk} make {n} shards, more than the "
                         f"{MAX_SHARDS} a folder may hold: raise chunk")  # fmt: skip
    return n


def settings_of(config: Any) -> dict[str, Any]:
    """The knobs that make a folder's shards what they are (all but :data:`WHERE_KNOBS`)."""
    return {k: v for k, v in knobs.to_dict(config).items() if k not in WHERE_KNOBS}


def write_shard(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` through :func:`conquian_arena.runfiles.write_atomic`: complete or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: np.savez_compressed(tmp, **arrays))


def _shard_arrays(config: Any, k: int, first: int, last: int, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    meta = {"kinds": list(config.kinds), "seed": config.seed, "shard": k, "chunk": config.chunk,
            "games": [first, last], "settings": settings_of(config)}  # fmt: skip
    return {**arrays, "meta": np.array(json.dumps(meta))}


def _remote_shard(play: Any, kinds: tuple[str, ...], seed: int, first: int, last: int) -> dict[str, np.ndarray]:
    return play(kinds, seed, first, last)


def generate_shards(config: Any, play: Any, log: Any = print) -> list[Path]:
    """The missing shards of ``config.out``, each ``play(kinds, seed, first, last)`` (a module-level
    function: Ray ships it by name) for its games, written atomically, locally or as Ray tasks
    (``config.ray``), all under the folder's lock; ``config`` is a recipe's knobs with ``out``,
    ``kinds``, ``seed``, ``games``, ``chunk`` and ``ray``.  The shard paths."""
    config.validate()
    n_shards = shard_count(config)
    out = Path(config.out)
    with claimed_folder(out, config, WHERE_KNOBS, "run", log):
        if (out / "shards").is_dir() and (gone := remove_partials(out / "shards")):
            log(f"deleted the half-written {', '.join(gone)} of a killed run")
        paths = [shard_path(out, k) for k in range(n_shards)]
        todo = [k for k in range(n_shards) if not check_entry(paths[k])]  # a link or a folder there: refused
        log(f"{out}: {n_shards - len(todo)} of {n_shards} shards already made")
        bounds = {k: (k * config.chunk, min((k + 1) * config.chunk, config.games)) for k in todo}
        t0 = time.perf_counter()
        if config.ray and todo:
            from conquian_arena.ray_runner import ray_map

            jobs = [(play, config.kinds, config.seed, *bounds[k]) for k in todo]
            for made, (i, result) in enumerate(ray_map(_remote_shard, jobs, config.ray, None, window=False), 1):
                k = todo[i]
                write_shard(paths[k], _shard_arrays(config, k, *bounds[k], result))
                log(f"shard {k} written ({progress(made, len(todo), t0)})")
        else:
            for i, k in enumerate(todo):
                arrays = play(config.kinds, config.seed, *bounds[k])
                write_shard(paths[k], _shard_arrays(config, k, *bounds[k], arrays))
                log(f"shard {k} written ({progress(i + 1, len(todo), t0)})")
    return paths


def progress(done: int, total: int, t0: float) -> str:
    """``done`` of ``total`` pieces of work made since ``t0`` (``time.perf_counter``): the time so far
    and, at that pace, the time left."""
    spent = time.perf_counter() - t0
    if done >= total:
        return f"{spent:.0f} s; {done} of {total} done"
    left = spent / done * (total - done)
    when = f"{left:.0f} s" if left < 120 else f"{left / 60:.0f} min"
    return f"{spent:.0f} s; {done} of {total} done, about {when} left at this pace"


# --------------------------------------------------------------------------- reading


def folder_shards(folder: str | Path, cls: type) -> tuple[Any, list[Path]]:
    """The knobs of the shard folder ``folder`` (its ``config.json`` read strictly as a ``cls``:
    every knob's type and declared range) and the paths of its shards in order; a
    :class:`ShardError` naming what is wrong (no config, a bad one, a shard missing, a shard the
    config does not make)."""
    folder = Path(folder)
    path = folder / "config.json"
    if not path.is_file():
        raise ShardError(f"{folder}: no config.json (is it a folder of generate?)")
    data = knobs.read_config(path)
    try:
        config = knobs.from_dict(cls, data)
        n = shard_count(config)
    except ValueError as err:
        raise ShardError(f"{path}: not a config of generate ({err})") from None
    paths = [shard_path(folder, k) for k in range(n)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise ShardError(f"{folder}: shards {missing[:3]}{' ...' if len(missing) > 3 else ''} missing "
                         "(run generate again to make them)")  # fmt: skip
    extra = sorted(p.name for p in (folder / "shards").glob("s*.npz") if p not in set(paths))
    if extra:
        raise ShardError(f"{folder}: shards {extra[:3]}{' ...' if len(extra) > 3 else ''} that its config.json "
                         f"does not make ({n} shards: games {config.games}, chunk {config.chunk}); was the "
                         "config edited? Restore it, or move those shards away")  # fmt: skip
    return config, paths


#: what a shard that is not a readable archive raises on the way (truncated, a bad CRC, not a zip, an
#: unknown compression or an encrypted member); an ``OSError`` is the disk's or the system's (an I/O
#: error, no permission, too many open files): the shard is left where it is
_UNREADABLE = (
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    ValueError,
    KeyError,
    NotImplementedError,
    RuntimeError,
)


def open_shard(
    path: str | Path,
    dtypes: dict[str, Any],
    shapes: Callable[[int], dict[str, tuple[int, ...]]],
    *,
    index: int | None = None,
    config: Any = None,
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta of a shard holding the arrays of ``dtypes`` and a JSON ``meta``, checked
    (no pickles; exactly those arrays; each of its dtype and of its shape in ``shapes(n)``, ``n``
    the length of ``game``): a :class:`ShardError` naming the file and what is wrong.  A shard that
    is not a readable archive is set aside as ``NAME.bad`` first (the next generate makes it again).
    With ``index`` and ``config`` (the folder's knobs) the shard must say it is shard ``index`` of
    those settings, its games within that shard's."""
    path = Path(path)
    where = f"shard {str(path)!r}"
    try:
        with np.load(path, allow_pickle=False) as data:
            names = set(data.files)
            expected = {*dtypes, "meta"}
            if names != expected:
                raise ShardError(f"{where}: holds {sorted(names)}, expected {sorted(expected)}")
            arrays = {name: data[name] for name in sorted(names)}
    except ShardError:
        raise
    except OSError as err:  # perhaps passing: never taken for a corrupt shard
        raise ShardError(f"{where}: cannot be read ({err.strerror or type(err).__name__}); left in place: "
                         "try again once the cause is fixed") from None  # fmt: skip
    except _UNREADABLE as err:
        if "allow_pickle" in str(err):
            raise ShardError(f"{where}: holds Python objects (not a readable .npz without pickles)") from None
        aside = set_aside(path, "bad")
        raise ShardError(f"{where}: not a readable .npz ({type(err).__name__}: {str(err)[:120]}); set aside as "
                         f"{aside.name}: run generate again to make it anew") from None  # fmt: skip
    meta_array = arrays.pop("meta")
    if meta_array.shape != () or meta_array.dtype.kind != "U":
        raise ShardError(f"{where}: meta is {meta_array.dtype} {meta_array.shape}, expected one JSON string")
    try:
        meta = parse_json(str(meta_array), where)
    except ModelFileError as err:
        raise ShardError(str(err)) from None
    if not isinstance(meta, dict):
        raise ShardError(f"{where}: its meta is {type(meta).__name__}, expected a JSON object")
    shape_of = shapes(len(arrays["game"]) if arrays["game"].ndim == 1 else -1)
    for name, dtype in dtypes.items():
        if arrays[name].dtype != dtype or arrays[name].shape != shape_of[name]:
            raise ShardError(f"{where}: {name} is {arrays[name].dtype} {arrays[name].shape}, "
                             f"expected {np.dtype(dtype)} {shape_of[name]}")  # fmt: skip
    if index is not None and config is not None:
        _check_origin(where, meta, index, config, arrays["game"])
    return arrays, meta


def _check_origin(where: str, meta: dict[str, Any], index: int, config: Any, game: np.ndarray) -> None:
    """The shard says it is shard ``index`` of ``config``'s settings and holds that shard's games."""
    if meta.get("shard") != index:
        raise ShardError(f"{where} says it is shard {meta.get('shard')!r}, its name says {index} (renamed or "
                         "swapped? move it away and run generate again)")  # fmt: skip
    mine = settings_of(config)
    if "settings" in meta:  # older shards carry kinds, seed and chunk alone
        theirs = meta["settings"] if isinstance(meta["settings"], dict) else {}
    else:
        theirs = {k: meta.get(k) for k in ("kinds", "seed", "chunk")}
        mine = {k: mine[k] for k in theirs}
    if "rules" not in theirs and mine.get("rules") == STANDARD.to_dict():  # made before the knob: the standard game
        mine.pop("rules")
    if theirs != mine:
        diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        raise ShardError(f"{where} was made with other knobs than its folder's config.json ({', '.join(diff)}): "
                         "a shard of another run, or an edited config (restore it, or move the shard "
                         "away)")  # fmt: skip
    first, last = index * config.chunk, min((index + 1) * config.chunk, config.games)
    if len(game) and (int(game.min()) < first or int(game.max()) >= last):
        raise ShardError(f"{where}: games {int(game.min())} .. {int(game.max())}, shard {index} holds games "
                         f"{first} .. {last - 1}")  # fmt: skip


__all__ = [
    "MAX_SHARDS",
    "ShardError",
    "folder_shards",
    "generate_shards",
    "open_shard",
    "settings_of",
    "shard_count",
    "shard_path",
    "write_shard",
]
