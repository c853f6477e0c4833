"""The kill fuzz's tools: run a command in this process with a kill at its N-th file event, resume
it, and compare the run folder with an uninterrupted run's (wall-time columns aside)."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from conquian_arena import runfiles as files

#: columns and keys that hold wall-clock seconds (they differ between any two runs)
WALL = {
    "seconds",
    "s",
    "play_s",
    "label_s",
    "fit_s",
    "eval_s",
    "frames_per_s",
    "frames_per_cpu_s",
    "us_engine",
    "us_rows",
    "us_forward",
    "us_pool",
    "us_update",
}
#: what is not compared: the log (it tells of the kill), the lock, TensorBoard's event files
SKIPPED = {"train.log", "run.lock"}


def _tensors(blob: bytes) -> Any:
    import torch

    return torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu")


def _plain(value: Any) -> Any:
    """Tensors as numpy arrays, nested; JSON meta without wall-time keys."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in WALL}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def read_file(path: Path) -> Any:
    """What of a run folder's file must be the same in every run of one recipe and seed."""
    if path.suffix == ".csv":
        return [{k: v for k, v in row.items() if k not in WALL} for row in csv.DictReader(open(path))]
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        drop = ("seconds", "files") if path.name == "state.json" else ("out",)
        return {k: v for k, v in data.items() if k not in drop}
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as z:
            return {n: _plain(_tensors(z.read(n))) for n in z.namelist() if n.endswith(".pth")}
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            out = {k: data[k] for k in data.files}
        if "meta" in out:
            out["meta"] = _plain(json.loads(str(out["meta"])))
        return out
    return path.read_bytes()


def folder_contents(folder: Path) -> dict[str, Any]:
    return {
        str(p.relative_to(folder)): read_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name not in SKIPPED and "tb" not in p.relative_to(folder).parts
    }


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ (NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}/{k}: only in one" for k in sorted(set(a) ^ set(b), key=str)]
        for k in sorted(set(a) & set(b), key=str):
            out += differences(a[k], b[k], f"{where}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items against {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        same = a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return [] if same else [f"{where}: arrays differ"]
    return [] if a == b else [f"{where}: {str(a)[:80]!r} != {str(b)[:80]!r}"]


def file_events(command) -> list[str]:
    """The file events of ``command()`` (a run from nothing), in order."""
    files.kill_at(None)
    assert command() == 0
    return files.events()


def killed_then_resumed(command, resume, k: int) -> bool:
    """``command()`` killed at its ``k``-th file event, then ``resume()``; whether the kill happened."""
    files.kill_at(k)
    try:
        command()
        killed = False
    except files.Killed:
        killed = True
    finally:
        files.kill_at(None)
    assert resume() == 0
    return killed
