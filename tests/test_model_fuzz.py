"""Crafted-file fuzz of the model formats (issue 25): the scorer's ``.npz``, MaskablePPO's ``.zip`` and a self-play
network's ``.npz`` with its card head.

Each case mutates a shipped file: byte flips and truncations of the archive, members dropped,
doubled, renamed (paths with ``..``, absolute, folders) or added, bytes flipped inside a member
(with a valid CRC), arrays and tensors given other dtypes, shapes, NaN, infinities and extreme
values.  Loading must give a :class:`agents.model_files.ModelFileError` naming the file, or a
network whose bot plays a whole game against ``random`` without an illegal move; any other
exception fails the case (its label and seed reproduce it).  A small subset runs by default,
the full fuzz with ``-m slow``.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.model_files import ModelFileError
from agents.scorer.scorer import DEFAULT_SCORER, ScorerAgent, load_scorer
from conquian_arena.match import deal_for_seed, play_game

EXTREMES = [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e5, 1e-45, 0.0]
NAMES = ["../w0.npy", "/abs.npy", "dir/", "w0.npy", "meta.npy", "x" * 300, "data", "policy.pth", "b99.npy", ""]


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _zip(rows: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile's "Duplicate name" warning
        with zipfile.ZipFile(buf, "w") as z:
            for name, data in rows:
                z.writestr(zipfile.ZipInfo(name or "_"), data)
    return buf.getvalue()


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=True)  # an object array is written as a pickle: the loader must refuse it unread
    return buf.getvalue()


def _mutate_array(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    kind = rng.integers(6)
    if kind == 0 and a.size:  # extreme values
        a = a.astype(np.float64 if rng.random() < 0.3 else a.dtype).copy()
        flat = a.reshape(-1)
        flat[rng.integers(a.size, size=rng.integers(1, 4))] = rng.choice(EXTREMES)
        return a
    if kind == 1:
        dtype = rng.choice(["int8", "int64", "float16", "float64", "complex64", "bool", "U5", "object", ">f4"])
        return a.astype(dtype)
    if kind == 2:
        return a.reshape(-1) if a.ndim > 1 else a.reshape(1, -1)
    if kind == 3:
        return a[: max(0, a.shape[0] - int(rng.integers(1, 3)))] if a.ndim else a
    if kind == 4:
        return np.zeros((*a.shape, 1), a.dtype) if a.ndim else np.zeros(3)
    return (a * rng.choice([1e3, -1e4, 1e30])).astype(a.dtype) if a.dtype.kind == "f" else a


def _mutate_archive(rng: np.random.Generator, data: bytes, members: dict[str, bytes], content) -> tuple[str, bytes]:
    """One mutated archive: (label, bytes); ``content(rng, name, bytes)`` mutates one member's content."""
    kind = int(rng.integers(8))
    rows = list(members.items())
    if kind == 0:
        out = bytearray(data)
        for _ in range(rng.integers(1, 9)):
            out[rng.integers(len(out))] ^= 1 << int(rng.integers(8))
        return "byte flips", bytes(out)
    if kind == 1:
        return "truncated", data[: int(rng.integers(0, len(data)))]
    if kind == 2:
        rows.pop(int(rng.integers(len(rows))))
        return "member dropped", _zip(rows)
    if kind == 3:
        rows.append(rows[int(rng.integers(len(rows)))])
        return "member doubled", _zip(rows)
    if kind == 4:
        k = int(rng.integers(len(rows)))
        rows[k] = (str(rng.choice(NAMES)), rows[k][1])
        return "member renamed", _zip(rows)
    if kind == 5:
        rows.append((str(rng.choice(NAMES)), bytes(rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8))))
        return "member added", _zip(rows)
    if kind == 6:
        k = int(rng.integers(len(rows)))
        body = bytearray(rows[k][1])
        for _ in range(rng.integers(1, 6)):
            if body:
                body[rng.integers(len(body))] ^= 1 << int(rng.integers(8))
        rows[k] = (rows[k][0], bytes(body))
        return f"bytes flipped in {rows[k][0]}", _zip(rows)
    k = int(rng.integers(len(rows)))
    label, body = content(rng, rows[k][0], rows[k][1])
    rows[k] = (rows[k][0], body)
    return label, _zip(rows)


def _scorer_content(rng, name, body):
    a = np.load(io.BytesIO(body), allow_pickle=False)
    if name == "meta.npy":
        texts = ['{"format": 1}', "[" * 5000, "x", '{"format": "conquian-action-scorer/1", "candidate_size": 176}']
        return "meta edited", _npy(np.array(str(rng.choice(texts))))
    return f"array {name} mutated", _npy(_mutate_array(rng, a))


def _ppo_content(rng, name, body):
    import torch

    if name != "policy.pth":
        return f"{name} replaced", bytes(rng.integers(0, 256, 40, dtype=np.uint8)) if rng.random() < 0.5 else b"{}"
    state = dict(torch.load(io.BytesIO(body), weights_only=True))
    key = list(state)[int(rng.integers(len(state)))]
    mutated = _mutate_array(rng, state[key].numpy())
    if mutated.dtype.kind in "fiub" and mutated.dtype != np.float16 and mutated.dtype.byteorder in "=<|":
        state[key] = torch.from_numpy(np.ascontiguousarray(mutated))
    else:
        state[key] = torch.zeros(0) if rng.random() < 0.5 else torch.zeros(1).expand(1 << 15, 1 << 15)
    buf = io.BytesIO()
    torch.save(state, buf)
    return f"tensor {key} mutated", buf.getvalue()


def _plays_legally(bot, seed: int) -> None:
    hands, stock = deal_for_seed(seed)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        record = play_game([bot, make_agent("random", seed=seed)], hands=hands, stock=stock, seed=seed)
    assert record.failure is None, record.failure


def _fuzz(fmt: str, cases: int, seed: int, tmp_path: Path) -> dict[str, int]:
    if fmt == "scorer":
        source, content, ext = DEFAULT_SCORER, _scorer_content, "npz"

        def load(path):
            return ScorerAgent.from_scorer(load_scorer(path), name="fuzzed")
    elif fmt == "selfplay":  # a self-play network with a card head (its arrays, meta and planes)
        pytest.importorskip("torch")
        from agents.networks.selfplay import SelfPlayAgent, read_selfplay
        from tests.test_card_head import headed_network, numpy_policy

        policy = numpy_policy(headed_network("potential"), "potential")
        source, content, ext = tmp_path / "headed.npz", _scorer_content, "npz"
        from agents.networks.selfplay import save_selfplay

        save_selfplay(source, [(w, b) for w, b, _ in policy.layers], {"frames": 1}, features="potential",
                      head=policy.head)  # fmt: skip

        def load(path):
            read_selfplay(path)  # the reader's errors, then the bot
            return SelfPlayAgent(str(path), deterministic=bool(seed % 2), seed=seed)
    else:
        pytest.importorskip("torch")
        from agents.networks.ppo import DEFAULT_MODEL, PolicyAgent, load_policy

        source, content, ext = DEFAULT_MODEL, _ppo_content, "zip"

        def load(path):
            return PolicyAgent(load_policy(path), deterministic=bool(seed % 2), seed=seed)

    data, members = source.read_bytes(), _members(source)
    tally = {"refused": 0, "played": 0}
    for case in range(cases):
        rng = np.random.default_rng([seed, case])
        label, body = _mutate_archive(rng, data, members, content)
        path = tmp_path / f"case{case}.{ext}"
        path.write_bytes(body)
        try:
            bot = load(path)
        except ModelFileError as err:
            assert str(path) in str(err), (label, case, err)
            tally["refused"] += 1
            continue
        except Exception as err:  # noqa: BLE001 - any other error is the defect this fuzz looks for
            pytest.fail(f"case {case} (seed {seed}, {label}): {type(err).__name__}: {err}")
        _plays_legally(bot, case)
        tally["played"] += 1
    return tally


@pytest.mark.parametrize("fmt", ["scorer", "ppo", "selfplay"])
def test_crafted_model_files_fast(fmt, tmp_path):
    tally = _fuzz(fmt, 40, seed=1, tmp_path=tmp_path)
    assert tally["refused"] >= 20


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["scorer", "ppo", "selfplay"])
def test_crafted_model_files_fuzz(fmt, tmp_path):
    tally = _fuzz(fmt, 1500, seed=2, tmp_path=tmp_path)
    assert tally["refused"] >= 750 and tally["played"] >= 1, tally
