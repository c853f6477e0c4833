"""The belief model's recipe: games that show the opponent's hidden hand, and the fit.

::

    conquian-train belief generate --out runs/belief/train --games 8000
    conquian-train belief generate --out runs/belief/train --ray auto   # the same shards on a Ray cluster
    conquian-train belief fit --data runs/belief/train --out runs/belief/fit --model agents/data/conquian_belief.npz
    conquian-train belief generate --help                               # every knob

(``python -m conquian_train.recipes.belief ...`` is the same.)

**generate** plays ``games`` games between the bots of ``kinds`` (every ordered pair in turn,
deals from ``derive_seed(seed, BELIEF_DEALS, game)``) and keeps, at every decision outside the
meld phase, the view of the player to move (:func:`agents.search.pimc.view_row`) with the true
hidden hand of its opponent and the opponent's kind.  A kind is a bot spec
(:mod:`agents.registry`), ``noisy:EPS:SPEC`` among them: that bot playing a uniformly random
legal action at an offer or a discard with probability ``EPS``.  Every ``chunk`` games make one shard
``shards/s{k:05d}.npz`` written atomically (complete or absent), so a killed run loses at most
the shards in progress and the same command resumes at the missing ones, making the same games;
one ``generate`` at a time works in a folder (a second stops with a line naming the first), and
each shard carries the settings that made it (:mod:`conquian_train.shards`).
With ``ray`` (an address, or ``local``) the shards are Ray tasks (:mod:`conquian_arena.ray_runner`'s
connection), whose positions come back to this process to be written; without it they are
played here, one after the other.

**fit** reads the shards of ``data`` (plain ``.npz``, no pickles; each folder's shards exactly as
its ``config.json`` makes them, each the shard it says it is, its contents bounded), keeps one game in
``val_every`` aside, computes the features (:mod:`agents.search.belief_kernels`, compiled) of at most
``positions`` positions, and fits the network of :mod:`agents.search.belief` with Adam on the cross
entropy of each unseen card, keeping the epoch of lowest held-out log loss (the logits shifted
to the exact count, as the search uses them); the model file (``model``, or ``belief.npz`` in the
fit folder ``out``) is written atomically.  The fit folder is a run folder like every recipe's
(:mod:`conquian_train.run`): its knobs claimed in ``config.json`` under its lock (a second fit
there stops with a line naming the first; one with other knobs is refused), its log in
``train.log``.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, PlayerView
from agents.registry import make_agent
from conquian_arena import knobs
from conquian_arena.knobs import knob
from conquian_env.game import GAME_OVER, MELD
from conquian_env.rules import STANDARD, Rules
from conquian_env.seeding import derive_seed

from ..run import RunFolder, claimed_folder
from ..seeding import BELIEF_BOTS, BELIEF_DEALS, BELIEF_FIT
from ..settings import FolderSettings
from ..shards import (
    ShardError,
    folder_shards,
    generate_shards,
    open_shard,
    shard_count,
    shard_path,  # noqa: F401 (the shards of a run, as the value recipe imports it)
)
from . import steps_recipe

#: columns of a view row kept in a shard (the stock columns of a view row are always empty)
ROW_COLUMNS = 23
#: the arrays of a shard, with their dtypes
SHARD_ARRAYS = {
    "rows": np.int64,  # (N, ROW_COLUMNS) the view rows
    "pool": np.int64,  # (N,) mask of the cards the player cannot see
    "n_opp": np.int64,  # (N,) the opponent's hidden-hand size
    "truth": np.int64,  # (N,) mask of the opponent's hidden hand
    "kind": np.int64,  # (N,) index in meta's kinds of the opponent's bot
    "observer": np.int64,  # (N,) index in meta's kinds of the player's own bot
    "game": np.int64,  # (N,) game number in the run
}


@dataclass
class GenerateConfig(FolderSettings):
    """The knobs of ``generate`` (see the module docstring): the shared folder, seed and rules
    (:class:`~conquian_train.settings.FolderSettings`) and the step's own."""

    out: str = knob("runs/belief/train", "run folder (config.json, shards/)")
    seed: int = knob(0, "seed of the deals and bots", low=0)
    games: int = knob(8000, "games to play", low=1)
    chunk: int = knob(100, "games per shard (the unit a killed run redoes)", low=1)
    kinds: tuple[str, ...] = knob(
        ("greedy", "pimc:iterations=300", "scorer", "random", "noisy:0.2:greedy"),
        "bots that play (specs: noisy:EPS:SPEC plays SPEC with random moves); every ordered pair in turn",
        spec=True,
    )
    ray: str = knob("", "play the shards as Ray tasks: a cluster address, or 'local' ('' : here)")

    def validate(self) -> None:
        knobs.check(self)  # every knob's type and declared range
        shard_count(self)
        if not self.kinds:
            raise ValueError("kinds is empty")
        for spec in self.kinds:
            make_agent(spec, 0)  # a bad spec fails now, not in the middle of a run


@dataclass
class FitConfig(FolderSettings):
    """The knobs of ``fit`` (see the module docstring): the shared folder, seed and rules
    (:class:`~conquian_train.settings.FolderSettings`) and the step's own."""

    out: str = knob("runs/belief/fit", "fit folder (config.json, train.log, belief.npz)")
    seed: int = knob(0, "seed of the subset, the split and the initial weights", low=0)
    data: tuple[str, ...] = knob(("runs/belief/train",), "run folders of generate to learn from")
    model: str = knob("", "the model file to write ('': belief.npz in the fit folder)")
    kinds: tuple[str, ...] = knob((), "learn only from positions against these kinds (none given: all)")
    hidden: int = knob(32, "hidden units", low=1)
    epochs: int = knob(12, "passes over the positions", low=1)
    lr: float = knob(2e-3, "learning rate (Adam)", above=0)
    batch: int = knob(4096, "cards per step", low=1)
    positions: int = knob(150_000, "positions used at most (a random subset; the memory is about 1 KB each)", low=1)
    val_every: int = knob(10, "one game in this many is held out to pick the epoch", low=1)

    def validate(self) -> None:
        knobs.check(self)  # every knob's type and declared range


# --------------------------------------------------------------------------- the bots


# --------------------------------------------------------------------------- generate

_BOTS: dict[tuple[tuple[str, ...], int], list[Agent]] = {}


def _bots(kinds: tuple[str, ...], seed: int) -> list[Agent]:
    """The bots of ``kinds``, built once per process (the game loop re-seeds them every game)."""
    key = (tuple(kinds), seed)
    if key not in _BOTS:
        _BOTS[key] = [make_agent(spec, derive_seed(seed, BELIEF_BOTS, k)) for k, spec in enumerate(kinds)]
    return _BOTS[key]


def game_kinds(game: int, n_kinds: int) -> tuple[int, int]:
    """The kinds in seats 0 and 1 of game ``game``: every ordered pair in turn."""
    return divmod(game % (n_kinds * n_kinds), n_kinds)


def play_shard(
    kinds: tuple[str, ...], seed: int, first: int, last: int, rules: Rules = STANDARD
) -> dict[str, np.ndarray]:
    """Games ``first .. last - 1`` under ``rules``: the positions of every decision outside the meld phase."""
    from agents.search.rows import view_row
    from conquian_arena.match import deal_for_seed, play_game

    bots = _bots(kinds, seed)
    out: dict[str, list] = {name: [] for name in SHARD_ARRAYS}

    for g in range(first, last):
        seats = game_kinds(g, len(kinds))

        def record(before, action, after, g=g, seats=seats):
            if before.phase in (MELD, GAME_OVER):
                return
            p = before.player
            view = PlayerView(before, p)
            row, _, n_opp = view_row(view)
            truth = before.hands[1 - p]
            assert truth.bit_count() == n_opp
            out["rows"].append(row[:ROW_COLUMNS])
            out["pool"].append(view.unseen())
            out["n_opp"].append(n_opp)
            out["truth"].append(truth)
            out["kind"].append(seats[1 - p])
            out["observer"].append(seats[p])
            out["game"].append(g)

        deal_seed = derive_seed(seed, BELIEF_DEALS, g)
        hands, stock = deal_for_seed(deal_seed)
        record_ = play_game([bots[seats[0]], bots[seats[1]]], hands=hands, stock=stock, seed=deal_seed, on_move=record,
                            rules=rules)  # fmt: skip
        if record_.failure:
            raise RuntimeError(f"game {g}: {record_.failure}")
    arrays = {name: np.array(out[name], dtype=dtype) for name, dtype in SHARD_ARRAYS.items()}
    arrays["rows"] = arrays["rows"].reshape(-1, ROW_COLUMNS)
    return arrays


def generate(config: GenerateConfig, log: Any = print) -> list[Path]:
    """Play the missing shards of ``config.out`` (see the module docstring); the shard paths."""
    return generate_shards(config, functools.partial(play_shard, rules=config.rules), log)


# --------------------------------------------------------------------------- reading the data


def _row_shapes(n: int) -> dict[str, tuple[int, ...]]:
    """The shapes of the arrays of a shard of ``n`` positions."""
    return {name: (n, ROW_COLUMNS) if name == "rows" else (n,) for name in SHARD_ARRAYS}


def read_shard(path: str | Path, index: int | None = None, config: Any = None) -> tuple[dict[str, np.ndarray],
                                                                                        dict[str, Any]]:  # fmt: skip
    """The arrays and meta of a shard, checked (:func:`conquian_train.shards.open_shard`; with
    ``index`` and ``config``, its origin too), and what it holds bounded: every card set a mask of
    the 40 cards, the player to move 0 or 1, the opponent's hand within the unseen cards and of
    the size it says, its bots' indices within the shard's kinds: a
    :class:`~conquian_train.shards.ShardError` naming the file and what is wrong."""
    from conquian_env.kernels import PLAYER

    arrays, meta = open_shard(path, SHARD_ARRAYS, _row_shapes, index=index, config=config)
    where = f"shard {str(path)!r}"
    kinds = meta.get("kinds")
    if not (isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds)):
        raise ShardError(f"{where}: its meta names no kinds (a list of bot specs), got {kinds!r}")
    full = (1 << 40) - 1
    rows, pool, truth, n_opp = arrays["rows"], arrays["pool"], arrays["truth"], arrays["n_opp"]
    masks = rows[:, :10]  # hands, melds, discards, refusals, dead pile, chosen cards
    problems = {
        "a card set outside the 40 cards": ((masks < 0) | (masks > full)).any() or ((pool < 0) | (pool > full)).any(),
        "a player to move other than 0 or 1": ((rows[:, PLAYER] != 0) & (rows[:, PLAYER] != 1)).any(),
        "an opponent's hand outside the unseen cards": ((truth & ~pool) != 0).any() or (truth < 0).any(),
        "an opponent's hand of another size than n_opp": (
            ((truth[:, None] >> np.arange(40)) & 1).sum(1) != n_opp
        ).any(),  # fmt: skip
        f"a bot index outside its {len(kinds)} kinds": any(
            ((arrays[n] < 0) | (arrays[n] >= len(kinds))).any() for n in ("kind", "observer")
        ),
    }
    for what, bad in problems.items():
        if bad:
            raise ShardError(f"{where}: {what}")
    return arrays, meta


def load_positions(folders: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """Every position of the shards of ``folders`` (each folder's shards exactly as its config.json
    makes them, each one's origin checked: :func:`conquian_train.shards.folder_shards`): the arrays
    of :data:`SHARD_ARRAYS`, with ``kind`` and ``observer`` as names (arrays of strings) and
    ``game`` made unique across folders."""
    parts: dict[str, list] = {name: [] for name in SHARD_ARRAYS}
    offset = 0
    for folder in folders:
        config, paths = folder_shards(folder, GenerateConfig)
        for k, path in enumerate(paths):
            arrays, meta = read_shard(path, k, config)
            names = np.array(meta["kinds"])
            for name in SHARD_ARRAYS:
                value = arrays[name]
                if name in ("kind", "observer"):
                    value = names[value]
                elif name == "game":
                    value = value + offset
                parts[name].append(value)
        offset += config.games
    return {name: np.concatenate(parts[name]) for name in SHARD_ARRAYS}


def pool_arrays(positions: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Full view rows, sorted pools (padded), pool sizes, hidden-hand sizes and labels (``labels[b,
    k]``: the opponent holds pool card ``k``) of the positions, for the compiled kernels."""
    from conquian_env.kernels import NUM_COLUMNS

    n = len(positions["pool"])
    rows = np.zeros((n, NUM_COLUMNS), dtype=np.int64)
    rows[:, :ROW_COLUMNS] = positions["rows"]
    bits = (positions["pool"][:, None] >> np.arange(40)) & 1
    sizes = bits.sum(1).astype(np.int64)
    order = np.argsort(-bits, axis=1, kind="stable")  # the pool's cards first, ascending
    pools = np.where(np.arange(40) < sizes[:, None], order, 0).astype(np.int64)
    labels = ((positions["truth"][:, None] >> pools) & 1).astype(np.float64)
    labels[np.arange(40) >= sizes[:, None]] = 0.0
    return rows, pools, sizes, positions["n_opp"].astype(np.int64), labels


def features_of(rows, pools, sizes, n_opps) -> tuple[np.ndarray, np.ndarray]:
    """The features of every pool card of the positions (float32, one row per card) and each
    row's position."""
    from agents.search.belief_kernels import NUM_FEATURES, features_batch

    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    x = np.zeros((int(sizes.sum()), NUM_FEATURES), dtype=np.float32)
    features_batch(rows, pools, sizes, n_opps, starts, x)
    return x, np.repeat(np.arange(len(sizes)), sizes)


def shifted_probabilities(logits: np.ndarray, where: np.ndarray, n_opps: np.ndarray) -> np.ndarray:
    """``sigmoid`` of each position's logits shifted to its exact count
    (:func:`agents.search.belief_kernels.exact_count_logits`)."""
    from agents.search.belief_kernels import exact_count_logits

    out = np.empty_like(logits, dtype=np.float64)
    starts = np.concatenate([[0], np.flatnonzero(np.diff(where)) + 1, [len(where)]])
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        z = logits[a:b].astype(np.float64).copy()
        exact_count_logits(z, b - a, int(n_opps[where[a]]))
        with np.errstate(over="ignore"):
            out[a:b] = 1.0 / (1.0 + np.exp(-z))
    return out


def scores(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean log loss and Brier score per unseen card (``p`` clipped to [1e-6, 1 - 1e-6] for the log)."""
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))), float(np.mean((p - y) ** 2))


# --------------------------------------------------------------------------- fit


def fit(config: FitConfig, log: Any = print) -> Path:
    """Fit the belief model on ``config.data`` in the fit folder ``config.out`` and write the model
    file (``config.model``, or ``belief.npz`` in the folder; see the module docstring); its path."""
    from agents.search.belief import save_belief

    config.validate()
    # one process per fit folder (a second stops with a line naming the first), its knobs claimed
    with claimed_folder(config.out, config, ("out", "model"), "fit", log) as out:
        run = RunFolder(out, echo=log)
        for folder in config.data:
            made = folder_shards(folder, GenerateConfig)[0].rules
            if made != config.rules:
                raise ValueError(f"{folder} holds games of the rules {made.to_dict()}, the fit's are "
                                 f"{config.rules.to_dict()} (the rule flags)")  # fmt: skip
        weights, meta = _fit(config, run.log)
        if config.model:
            path = save_belief(config.model, weights, meta)
        else:
            path = run.write_file("belief.npz", lambda tmp: save_belief(tmp, weights, meta))
        run.log(f"wrote {path} (held-out log loss {meta['held_out_log_loss']:.4f})")
        return path


def _fit(config: FitConfig, log: Any) -> tuple[tuple[np.ndarray, ...], dict[str, Any]]:
    """The fitted weights of the epoch of lowest held-out log loss, and their meta."""
    import torch

    from agents.search.belief import forward_numpy

    from ..scorer_fit import fit_epoch

    t0 = time.perf_counter()
    pos = load_positions(config.data)
    keep = np.ones(len(pos["game"]), dtype=bool)
    if config.kinds:
        keep &= np.isin(pos["kind"], list(config.kinds))
    rng = np.random.default_rng(derive_seed(config.seed, BELIEF_FIT))
    idx = np.flatnonzero(keep)
    if len(idx) > config.positions:
        idx = np.sort(rng.choice(idx, config.positions, replace=False))
    if not len(idx):
        raise ValueError(f"no positions in {list(config.data)} for kinds {list(config.kinds)}")
    pos = {k: v[idx] for k, v in pos.items()}
    rows, pools, sizes, n_opps, labels = pool_arrays(pos)
    x, where = features_of(rows, pools, sizes, n_opps)
    y = labels[np.arange(40)[None, :] < sizes[:, None]].astype(np.float32)
    val_pos = pos["game"] % config.val_every == 0
    val = val_pos[where]
    x_train, yt, x_val, yv = x[~val], y[~val], x[val], y[val]
    log(f"{len(idx)} positions ({val_pos.sum()} held out), {len(x)} cards, {x.shape[1]} features "
        f"({time.perf_counter() - t0:.0f} s)")  # fmt: skip
    n_in, n_hidden = x.shape[1], config.hidden
    w = [
        rng.normal(0, np.sqrt(2.0 / n_in), (n_in, n_hidden)),
        np.zeros(n_hidden),
        rng.normal(0, np.sqrt(1.0 / n_hidden), (n_hidden, 1)),
        np.zeros(1),
    ]
    # the shared fit loop (conquian_train.scorer_fit.fit_epoch): Adam in float64, the learning rate
    # warmed up over the first 200 steps, the loss the mean log loss of the cards
    params = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in w]
    opt = torch.optim.Adam(params, lr=config.lr, betas=(0.9, 0.999), eps=1e-8)
    xt, ytt = torch.from_numpy(x_train), torch.from_numpy(yt.astype(np.float64))

    def log_loss(j: torch.Tensor) -> torch.Tensor:
        z = (torch.relu(xt[j].double() @ params[0] + params[1]) @ params[2])[:, 0] + params[3][0]
        return torch.nn.functional.binary_cross_entropy_with_logits(z, ytt[j])

    step, best, best_w = 0, np.inf, None
    for epoch in range(config.epochs):
        order = rng.permutation(len(x_train))
        step += fit_epoch(opt, order, config.batch, log_loss, lr=lambda k: config.lr * min(1.0, (k + 1) / 200),
                          step=step)[1]  # fmt: skip
        w = [a.detach().numpy().copy() for a in params]
        logits = np.concatenate([forward_numpy(x_val[s : s + 65536].astype(np.float64), *w)
                                 for s in range(0, len(x_val), 65536)])  # fmt: skip
        p = shifted_probabilities(logits, where[val], n_opps)
        loss, brier = scores(p, yv)
        log(f"epoch {epoch}: held-out log loss {loss:.4f}, Brier {brier:.4f} ({time.perf_counter() - t0:.0f} s)")
        if loss < best:
            best, best_w = loss, [a.copy() for a in w]
    meta = {
        "hidden": n_hidden,
        "trained_on": sorted(set(pos["kind"].tolist())),
        "positions": int(len(idx)),
        "held_out_log_loss": round(best, 5),
        "data": list(config.data),
    }
    return tuple(best_w), meta


# --------------------------------------------------------------------------- the command


def quick(root: Path, workers: int) -> list[tuple[Path, list[str], list[str]]]:
    """The recipe at a tiny size (:data:`conquian_train.recipes.QuickRun`; it takes no processes knob)."""
    data, fit = root / "data", root / "fit"
    generate = ["generate", "--out", str(data), "--kinds", "random", "greedy", "--games", "8", "--chunk", "4",
                "--seed", "1"]  # fmt: skip
    fit_ = ["fit", "--data", str(data), "--out", str(fit), "--epochs", "1", "--hidden", "4", "--val-every", "3"]
    return [(data, generate, generate), (fit, fit_, fit_)]  # a step: the same command resumes


RECIPE = steps_recipe("belief", "the belief model: generate games that show the hidden hand, then fit", __doc__, {
    "generate": ("play and record games (resumes)", GenerateConfig, generate),
    "fit": ("fit the belief model", FitConfig, fit),
}, quick)  # fmt: skip
#: ``conquian-train belief generate|fit``: the games (resumable), then the fit; an exit status
main = RECIPE.main

if __name__ == "__main__":
    sys.exit(main())
