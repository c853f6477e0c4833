"""The leaf value's recipe: games the search plays, their full positions and results, and the fit.

::

    python -m conquian_train.value generate --out runs/value/train --games 3000
    python -m conquian_train.value generate --out runs/value/train --ray auto   # the same shards on Ray
    python -m conquian_train.value fit --data runs/value/train --model agents/data/conquian_value.npz

**generate** plays ``games`` games between the bots of ``kinds`` (every ordered pair in turn,
deals from ``derive_seed(seed, DEAL_STREAM, game)``; a kind is a bot spec or ``noisy:EPS:SPEC``,
as in :mod:`conquian_train.belief`) and keeps, at every offer, the full position (both hands,
both melds, the dead pile, the card offered: the first 23 columns of a row of the batched
engine, the stock order left out) with the game's winner.  Every ``chunk`` games make one shard
``shards/s{k:05d}.npz`` written atomically (complete or absent), so a killed run loses at most
the shards in progress and the same command resumes at the missing ones, making the same games;
with ``ray`` the shards are Ray tasks (the shard pattern of :mod:`conquian_train.belief`).

**fit** reads the shards (plain ``.npz``, no pickles), keeps one game in ``val_every`` aside,
computes the features of every position from both players' sides (:mod:`agents.value_kernels`,
compiled) and fits the network of :mod:`agents.value` with Adam on the cross entropy of the
result (win 1, draw 1/2, loss 0), keeping the epoch of lowest held-out loss; the inputs are
standardized during the fit and the scaling folded into the first layer, so the model file reads
the raw features. The file is written atomically.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conquian_env.game import OFFER
from conquian_env.seeding import derive_seed

from . import belief, knobs
from .belief import BOT_STREAM, game_kinds, generate_shards, make_kind, shard_path  # noqa: F401 (shard_path: the shards of a run)
from .knobs import knob
from .recipes import Recipe, steps_main

#: named seed streams of the recipe (words of derive_seed after the run's seed)
DEAL_STREAM = 0x7A1E0
FIT_STREAM = 0x7A1E2
#: columns of a full row kept in a shard (the stock order is not kept: the value does not read it)
ROW_COLUMNS = 23
SHARD_ARRAYS = {
    "rows": np.int64,  # (N, ROW_COLUMNS) full positions at an offer
    "winner": np.int64,  # (N,) the game's winner, -1 a draw
    "game": np.int64,  # (N,) game number in the run
}


@dataclass
class GenerateConfig(belief.GenerateConfig):
    """The knobs of ``generate`` (see the module docstring): the belief recipe's, checked the same
    way, with this recipe's folder, game count and bots."""

    out: str = knob("runs/value/train", "run folder (config.json, shards/)")
    games: int = knob(3000, "games to play", low=1)
    kinds: tuple[str, ...] = knob(
        ("pimc:iterations=300", "greedy", "noisy:0.1:pimc:iterations=300"),
        "bots that play (specs, or noisy:EPS:SPEC); every ordered pair in turn",
    )


@dataclass
class FitConfig:
    """The knobs of ``fit`` (see the module docstring)."""

    data: tuple[str, ...] = knob(("runs/value/train",), "run folders of generate to learn from")
    model: str = knob("runs/value/value.npz", "the model file to write")
    hidden: int = knob(64, "hidden units", low=1)
    epochs: int = knob(10, "passes over the positions", low=1)
    lr: float = knob(2e-3, "learning rate (Adam)", above=0)
    batch: int = knob(1024, "positions per step", low=1)
    val_every: int = knob(10, "one game in this many is held out to pick the epoch", low=1)
    l2: float = knob(1e-3, "weight decay of the first layer (the positions of a game are alike: it overfits)", low=0)
    seed: int = knob(0, "seed of the order and the initial weights", low=0)

    def validate(self) -> None:
        knobs.check(self)  # every knob's type and declared range


# --------------------------------------------------------------------------- generate

_BOTS: dict[tuple[tuple[str, ...], int], list] = {}


def _bots(kinds: tuple[str, ...], seed: int) -> list:
    """The bots of ``kinds``, built once per process (the game loop re-seeds them every game)."""
    key = (tuple(kinds), seed)
    if key not in _BOTS:
        _BOTS[key] = [make_kind(spec, derive_seed(seed, BOT_STREAM, k)) for k, spec in enumerate(kinds)]
    return _BOTS[key]


def full_row(state) -> np.ndarray:
    """The first ROW_COLUMNS columns of the batched engine's row of ``state`` (both hands)."""
    from agents.base import PlayerView
    from agents.rows import view_row

    row, _, _ = view_row(PlayerView(state, state.player))
    row[1 - state.player] = state.hands[1 - state.player]  # H0 + opponent: the hidden hand
    return row[:ROW_COLUMNS]


def play_shard(kinds: tuple[str, ...], seed: int, first: int, last: int) -> dict[str, np.ndarray]:
    """Games ``first .. last - 1``: the full position at every offer, with the game's winner."""
    from conquian_arena.match import deal_for_seed, play_game

    bots = _bots(kinds, seed)
    out: dict[str, list] = {name: [] for name in SHARD_ARRAYS}
    for g in range(first, last):
        seats = game_kinds(g, len(kinds))
        rows: list[np.ndarray] = []

        def record(before, action, after, rows=rows):
            if before.phase == OFFER:
                rows.append(full_row(before))

        deal_seed = derive_seed(seed, DEAL_STREAM, g)
        hands, stock = deal_for_seed(deal_seed)
        rec = play_game([bots[seats[0]], bots[seats[1]]], hands=hands, stock=stock, seed=deal_seed, on_move=record)
        if rec.failure:
            raise RuntimeError(f"game {g}: {rec.failure}")
        out["rows"].extend(rows)
        out["winner"].extend([-1 if rec.winner is None else rec.winner] * len(rows))
        out["game"].extend([g] * len(rows))
    arrays = {name: np.array(out[name], dtype=dtype) for name, dtype in SHARD_ARRAYS.items()}
    arrays["rows"] = arrays["rows"].reshape(-1, ROW_COLUMNS)
    return arrays


def generate(config: GenerateConfig, log: Any = print) -> list[Path]:
    """Play the missing shards of ``config.out`` (see the module docstring); the shard paths."""
    return generate_shards(config, play_shard, log)


# --------------------------------------------------------------------------- reading the data


def read_shard(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta of a shard, checked (no pickles): ``ValueError`` naming what is wrong."""
    return belief.open_shard(path, SHARD_ARRAYS, lambda n: {"rows": (n, ROW_COLUMNS), "winner": (n,), "game": (n,)})


def load_positions(folders: tuple[str, ...] | list[str]) -> dict[str, np.ndarray]:
    """Every position of the shards of ``folders`` (``game`` made unique across folders)."""
    parts: dict[str, list] = {name: [] for name in SHARD_ARRAYS}
    offset = 0
    for folder in folders:
        paths = sorted((Path(folder) / "shards").glob("s*.npz"))
        if not paths:
            raise ValueError(f"{folder}: no shards (run generate first)")
        top = 0
        for path in paths:
            arrays, _ = read_shard(path)
            if len(arrays["game"]):
                top = max(top, int(arrays["game"].max()) + 1)
            arrays["game"] = arrays["game"] + offset
            for name in SHARD_ARRAYS:
                parts[name].append(arrays[name])
        offset += top
    return {name: np.concatenate(parts[name]) for name in SHARD_ARRAYS}


def training_set(pos: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (both players' sides of every position), targets (win 1, draw 1/2, loss 0) and games."""
    from agents.value_kernels import batch_features

    n = len(pos["game"])
    rows = np.concatenate([pos["rows"], pos["rows"]])
    players = np.concatenate([np.zeros(n, np.int64), np.ones(n, np.int64)])
    winner = np.concatenate([pos["winner"], pos["winner"]])
    y = np.where(winner < 0, 0.5, (winner == players).astype(np.float64))
    return batch_features(rows, players), y, np.concatenate([pos["game"], pos["game"]])


def bce(p: np.ndarray, y: np.ndarray) -> float:
    q = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q)))


# --------------------------------------------------------------------------- fit


def fit(config: FitConfig, log: Any = print) -> Path:
    """Fit the leaf value on ``config.data`` and write ``config.model`` (see the module docstring)."""
    from agents.value import forward_numpy, save_value

    config.validate()
    t0 = time.perf_counter()
    x, y, games = training_set(load_positions(config.data))
    val = games % config.val_every == 0
    mu = x[~val].mean(0)
    sd = x[~val].std(0)
    sd = np.maximum(sd, 0.3)  # a rare card bit is not blown up to a huge input
    xs = (x - mu) / sd
    x_train, yt, x_val, yv = xs[~val], y[~val], xs[val], y[val]
    log(f"{len(x)} examples ({val.sum()} held out), {x.shape[1]} features, mean result {y.mean():.3f} "
        f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    rng = np.random.default_rng(derive_seed(config.seed, FIT_STREAM))
    n_in, n_hidden = x.shape[1], config.hidden
    w = [
        rng.normal(0, np.sqrt(2.0 / n_in), (n_in, n_hidden)),
        np.zeros(n_hidden),
        rng.normal(0, np.sqrt(1.0 / n_hidden), (n_hidden, 1)),
        np.zeros(1),
    ]
    m = [np.zeros_like(a) for a in w]
    v = [np.zeros_like(a) for a in w]
    step, best, best_w = 0, np.inf, None
    b1, b2 = 0.9, 0.999
    log(f"held-out loss of the mean: {bce(np.full(len(yv), yt.mean()), yv):.4f}")
    for epoch in range(config.epochs):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), config.batch):
            j = order[start : start + config.batch]
            xb, yb = x_train[j], yt[j]
            pre = xb @ w[0] + w[1]
            h = np.maximum(pre, 0.0)
            z = h @ w[2][:, 0] + w[3][0]
            g = (1.0 / (1.0 + np.exp(-z)) - yb) / len(j)
            gh = np.outer(g, w[2][:, 0]) * (pre > 0)
            grads = [xb.T @ gh + config.l2 * w[0], gh.sum(0), (h.T @ g)[:, None], np.array([g.sum()])]
            step += 1
            lr = config.lr * min(1.0, step / 200)
            for a, ga, ma, va in zip(w, grads, m, v, strict=True):
                ma *= b1
                ma += (1 - b1) * ga
                va *= b2
                va += (1 - b2) * ga * ga
                a -= lr * (ma / (1 - b1**step)) / (np.sqrt(va / (1 - b2**step)) + 1e-8)
        loss = bce(forward_numpy(x_val, *w), yv)
        log(f"epoch {epoch}: held-out loss {loss:.4f} ({time.perf_counter() - t0:.0f} s)")
        if loss < best:
            best, best_w = loss, [a.copy() for a in w]
    # fold the standardization into the first layer: (x - mu) / sd @ w0 + b0
    w0 = best_w[0] / sd[:, None]
    b0 = best_w[1] - (mu / sd) @ best_w[0]
    meta = {"hidden": n_hidden, "examples": int(len(x)), "held_out_loss": round(best, 5), "data": list(config.data)}
    path = save_value(config.model, (w0, b0, best_w[2], best_w[3]), meta)
    log(f"wrote {path} (held-out loss {best:.4f})")
    return path


# --------------------------------------------------------------------------- the command


def main(argv: list[str] | None = None, prog: str = "conquian-train value") -> int:
    return steps_main(argv, prog, __doc__, {
        "generate": ("play and record games (resumes)", GenerateConfig, generate),
        "fit": ("fit the leaf value", FitConfig, fit),
    })  # fmt: skip


RECIPE = Recipe("value", "the search's leaf value: generate games the search plays, then fit (measured no gain)",
                (GenerateConfig, FitConfig), main)  # fmt: skip

if __name__ == "__main__":
    sys.exit(main())
