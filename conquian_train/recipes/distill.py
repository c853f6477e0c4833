"""The distilled scorer's recipe: greedy's games on the compiled engine, every choice valued by flat
Monte Carlo, and a deep-sets action scorer fitted to the values (the shipped ``scorer``).

::

    conquian-train distill generate --out runs/distill/labels --games 300000
    conquian-train distill generate --out runs/distill/labels --ray auto     # the same shards on Ray
    conquian-train distill fit --data runs/distill/labels --out runs/distill/fit
    conquian-train distill fit --help                                         # every knob

(``python -m conquian_train.recipes.distill ...`` is the same.)

**generate** plays ``games`` games of greedy against greedy on the compiled engine
(:func:`agents.scorer.selfplay_kernels.play_games`; game ``g``'s deal from ``derive_seed(seed, DISTILL_DEALS,
g)``, the arena's deal of that seed) and records the decisions with a choice (an offer to take or
refuse, a discard among two cards or more) of one seat drawn per game; every candidate of every
recorded decision is valued by ``playouts`` greedy playouts from a uniform determinization of the
cards the player cannot see (:func:`agents.search.pimc.label_rows`: ``pimc``'s values, without its
inference; a label never peeks).  Every ``chunk`` games make one shard ``shards/s{k:05d}.npz``
written atomically (complete or absent): a killed run loses at most the shards in progress and the
same command resumes at the missing ones, making the same games and labels; with ``ray`` the
shards are Ray tasks (the shard library, :mod:`conquian_train.shards`).

**fit** reads the shards (plain ``.npz``, no pickles, each array's dtype and shape checked, each the
shard of its folder's config.json it says it is, every value within [0, 1]), holds
out the games with id % ``holdout`` == 0 and fits the scorer of ``hidden`` layers (pooled after
layer ``pool_after``: deep sets, :class:`agents.scorer.scorer.ActionScorer`) by cross-entropy on
softmax(values / ``temperature``) over each position's candidates, Adam with a cosine learning
rate, batches in an order drawn per epoch.  The inputs stay float16 in memory (2M positions: 8.6 GB)
and become float32 a batch at a time.

The fit folder ``out`` is a run folder like ``ppo``'s and ``exit``'s (:mod:`conquian_train.run`;
its knobs :class:`FitConfig`, the shared :class:`~conquian_train.settings.RunSettings` among them):
``config.json`` claimed under the folder's lock (one process at a time: a second stops with a
line naming the first; a rerun with other knobs is refused by name), ``train.log``, ``fit.csv``
(held-out regret by epoch) and ``eval.csv`` appended, and at the end of every epoch a checkpoint
(``checkpoints/``: ``latest.npz``, the weights, Adam's moments and the kept epoch's layers, and
``state.json``, the tables' sizes among it), swapped in whole.  A rerun of the same command
resumes after the checkpoint's epoch, cuts what a killed session wrote after it, and ends with
the same network and files as a run never stopped.  With ``eval_games`` the network plays each
of ``eval_opponents`` before the first epoch (the untrained network: the curve's step 0, played
once) and after each, on the duplicate deals of ``conquian-evaluate --seed eval_seed``
(:class:`conquian_train.evaluation.Evaluator`, the evaluator of every recipe): ``eval.csv``,
``best.npz`` (the best score against ``best_by``) and ``learning_curve.png`` (score by positions
trained on, and the held-out regret beside greedy's).  ``scorer.npz`` is the epoch of lowest
held-out regret (the value lost against each position's best candidate), printed beside greedy's
on the same positions.
"""

from __future__ import annotations

import functools
import math
import sys
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conquian_arena import knobs
from conquian_arena.knobs import knob
from conquian_arena.runfiles import RunFolderError
from conquian_env.seeding import derive_seed

from ..evaluation import Evaluator, ScorerModel
from ..run import RunFolder, claimed_folder
from ..seeding import DISTILL_DEALS, DISTILL_FIT, DISTILL_LABELS, DISTILL_SEATS
from ..settings import FolderSettings, RunSettings, recipe_knobs
from ..shards import ShardError, folder_shards, generate_shards, open_shard, shard_count
from . import steps_recipe

#: the arrays of a shard: candidates' inputs, their action ids (-1: none), their values, the game
SHARD_ARRAYS = {"x": np.float16, "actions": np.int8, "q": np.float32, "game": np.int64}


@dataclass
class GenerateConfig(FolderSettings):
    """The knobs of ``generate`` (see the module docstring): the shared folder, seed and rules
    (:class:`~conquian_train.settings.FolderSettings`) and the step's own."""

    out: str = knob("runs/distill/labels", "run folder (config.json, shards/)")
    seed: int = knob(0, "seed of the deals, the seats and the labels' draws", low=0)
    games: int = knob(300_000, "games of greedy against greedy to record", low=1)
    chunk: int = knob(5000, "games per shard (the unit a killed run redoes)", low=1)
    playouts: int = knob(32, "greedy playouts valuing each candidate (each from its own determinization)", low=1)
    kinds: tuple[str, ...] = knob(("greedy",), "the bots that play: greedy against greedy (the only kind so far)")
    ray: str = knob("", "make the shards as Ray tasks: a cluster address, or 'local' ('' : here)")

    def validate(self) -> None:
        knobs.check(self)  # every knob's type and declared range
        shard_count(self)
        self.standard_rules_only("the compiled games and playouts of generate")
        if tuple(self.kinds) != ("greedy",):
            raise ValueError(f"kinds {list(self.kinds)!r}: the compiled games are greedy's, kinds must be ['greedy']")


@dataclass
class FitConfig(RunSettings):
    """The knobs of ``fit`` (see the module docstring): the shared ones of
    :class:`~conquian_train.settings.RunSettings`, some with this step's defaults, and its own."""

    # the shared knobs' defaults for this step (each keeps its place among the shared ones)
    out: str = knob("runs/distill/fit", "fit folder (config.json, checkpoints/, fit.csv, eval.csv, scorer.npz)")
    seed: int = knob(0, "seed of the initial weights and the batch order", low=0)
    eval_games: int = knob(
        0,
        "games per evaluation opponent before the first epoch and after each (duplicate deals, seats swapped; "
        "0: no evaluation)",
        low=0,
    )
    eval_opponents: tuple[str, ...] = knob(("greedy",), "bot specs evaluated against", spec=True)
    torch_threads: int = knob(2, "torch threads", low=1)
    workers: int = knob(1, "processes for the evaluations (0: all cores)", low=0)

    data: tuple[str, ...] = knob(("runs/distill/labels",), "run folders of generate to learn from")
    hidden: tuple[int, ...] = knob((256, 256), "hidden layer sizes")
    pool_after: int = knob(
        0, "the hidden layer pooled over the candidates (deep sets); -1: each candidate alone", low=-1
    )
    epochs: int = knob(6, "passes over the training positions", low=1)
    lr: float = knob(1e-3, "peak learning rate (Adam, cosine schedule to 0)", above=0)
    batch: int = knob(256, "positions per step", low=1)
    temperature: float = knob(0.05, "the targets are softmax(values / T)", above=0)
    holdout: int = knob(20, "games whose id is a multiple of holdout are held out to pick the epoch", low=2)
    positions: int = knob(0, "use the first this many positions (0: all)", low=0)

    def validate(self) -> None:
        knobs.check(self)  # every knob's type and declared range
        self.validate_run()  # best_by among the evaluation opponents, their specs
        self.standard_rules_only("the labels of generate and the fit's evaluations")
        if not self.hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"hidden must be positive layer sizes, got {self.hidden!r}")
        if self.pool_after >= len(self.hidden):
            raise ValueError(f"pool_after {self.pool_after} is not a hidden layer (0 .. {len(self.hidden) - 1}, or -1)")

    def pool(self) -> int | None:
        return None if self.pool_after < 0 else self.pool_after


# --------------------------------------------------------------------------- generate


def deals_of(seed: int, first: int, last: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Games ``first .. last - 1``: their kernel deals (game ``g``'s the arena's deal of
    ``derive_seed(seed, DISTILL_DEALS, g)``), who moves first, and the seat recorded."""
    deals, firsts, seats = [], [], []
    for g in range(first, last):
        deals.append(np.random.default_rng(derive_seed(seed, DISTILL_DEALS, g)).permutation(40))
        bits = np.random.default_rng(derive_seed(seed, DISTILL_SEATS, g)).integers(0, 2, 2)
        firsts.append(bits[0])
        seats.append(bits[1])
    return np.array(deals, np.int64).reshape(-1, 40), np.array(firsts, np.int64), np.array(seats, np.int64)


def play_shard(kinds: tuple[str, ...], seed: int, first: int, last: int, playouts: int = 32) -> dict[str, np.ndarray]:
    """Games ``first .. last - 1`` and the values of their recorded decisions' candidates."""
    from agents.scorer.selfplay_kernels import GREEDY, GREEDY_LEARNER, play_games
    from agents.search.pimc import label_rows

    deals, firsts, seats = deals_of(seed, first, last)
    _, game, rows, _ = play_games(deals, firsts, seats, np.full(len(deals), GREEDY), 0, GREEDY_LEARNER)
    if not len(rows):
        raise RuntimeError(f"games {first} .. {last - 1}: no decision with a choice recorded")
    x, actions, q, _ = label_rows(rows, playouts, seed=derive_seed(seed, DISTILL_LABELS, first))
    return {"x": x.astype(np.float16), "actions": actions.astype(np.int8), "q": q.astype(np.float32),
            "game": (game + first).astype(np.int64)}  # fmt: skip


def generate(config: GenerateConfig, log: Any = print) -> list[Path]:
    """Make the missing shards of ``config.out`` (see the module docstring); the shard paths."""
    config.validate()
    return generate_shards(config, functools.partial(play_shard, playouts=config.playouts), log)


# --------------------------------------------------------------------------- reading the data


def _shapes(n: int) -> dict[str, tuple[int, ...]]:
    """The shapes of the arrays of a shard of ``n`` positions."""
    from agents.scorer.scorer import CANDIDATE_SIZE, MAX_CANDIDATES

    return {"x": (n, MAX_CANDIDATES, CANDIDATE_SIZE), "actions": (n, MAX_CANDIDATES), "q": (n, MAX_CANDIDATES),
            "game": (n,)}  # fmt: skip


def read_shard(path: str | Path, index: int | None = None, config: Any = None) -> dict[str, np.ndarray]:
    """The arrays of a shard, checked (:func:`conquian_train.shards.open_shard`; with ``index`` and
    ``config``, its origin too) and bounded: every position with two candidates or more, every
    value a win probability (within [0, 1]), every input finite and within the scorer's range: a
    :class:`~conquian_train.shards.ShardError` naming the file and what is wrong."""
    from agents.scorer.scorer import INPUT_BOUND

    arrays, _ = open_shard(path, SHARD_ARRAYS, _shapes, index=index, config=config)
    where = f"shard {str(path)!r}"
    valid = arrays["actions"] >= 0
    if (valid.sum(1) < 2).any():
        raise ShardError(f"{where}: a position with fewer than two candidates")
    q = arrays["q"]
    if not np.isfinite(q).all() or (q < 0).any() or (q > 1).any():
        raise ShardError(f"{where}: a value that is not finite or not within [0, 1] (a value is a win probability)")
    if not np.isfinite(arrays["x"]).all() or (np.abs(arrays["x"]) > INPUT_BOUND).any():
        raise ShardError(f"{where}: an input that is not finite or not within ±{INPUT_BOUND:g}")
    return arrays


def load_labels(folders: tuple[str, ...] | list[str], limit: int = 0) -> dict[str, np.ndarray]:
    """The positions of the shards of ``folders`` in order (each folder's shards exactly as its
    config.json makes them: :func:`conquian_train.shards.folder_shards`; ``game`` made unique across
    folders), the first ``limit`` only when it is not 0."""
    plan: list[tuple[Path, int, Any, int]] = []  # each shard to read, its index, its folder's config, game offset
    offset, count = 0, 0
    for folder in folders:
        config, paths = folder_shards(folder, GenerateConfig)
        for k, path in enumerate(paths):
            count += _positions_in(path)  # the small array alone first, to fill arrays made once
            plan.append((path, k, config, offset))
            if limit and count >= limit:
                break
        offset += config.games
        if limit and count >= limit:
            break
    n = min(count, limit) if limit else count
    shapes = _shapes(n)
    out = {name: np.empty(shapes[name], dtype) for name, dtype in SHARD_ARRAYS.items()}
    at = 0
    for path, k, config, first_game in plan:
        arrays = read_shard(path, k, config)
        arrays["game"] = arrays["game"] + first_game
        take = min(len(arrays["game"]), n - at)
        for name in SHARD_ARRAYS:
            out[name][at : at + take] = arrays[name][:take]
        at += take
    if at != n:
        raise ValueError(f"the shards of {list(folders)} changed while they were read")
    return out


def _positions_in(path: Path) -> int:
    """How many positions shard ``path`` holds (its ``game`` array read alone); a shard that is not a
    readable archive is set aside (:func:`conquian_train.shards.open_shard`)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            game = data["game"]
            if game.ndim == 1:
                return len(game)
    except Exception:  # noqa: BLE001, S110 - open_shard names it (and sets an unreadable one aside)
        pass
    open_shard(path, SHARD_ARRAYS, _shapes)
    raise ShardError(f"shard {str(path)!r}: game is not one number per position")


# --------------------------------------------------------------------------- fit

#: the fit's keys of ``checkpoints/state.json`` (beside :data:`conquian_train.run.COMMON_STATE`)
FIT_STATE: dict[str, str] = {"epochs_done": "count", "step": "count", "best_regret": "number"}
#: the knobs that do not change what a fit makes (left out of its claim and its recipe hash)
FIT_PROCESS_KNOBS = ("out", "torch_threads", "workers")


def _lr(config: FitConfig, step: int, total: int) -> float:
    return 0.5 * config.lr * (1.0 + math.cos(math.pi * min(step, total) / total))


def _checkpoint_arrays(net: Any, opt: Any, best_layers: list) -> dict[str, np.ndarray]:
    """The weights, Adam's state and the kept epoch's layers, as plain arrays (no pickles)."""
    arrays: dict[str, np.ndarray] = {}
    for i, p in enumerate(net.parameters()):
        arrays[f"p{i}"] = p.detach().numpy().copy()
        st = opt.state.get(p, {})
        if st:
            arrays[f"m{i}"] = st["exp_avg"].numpy().copy()
            arrays[f"v{i}"] = st["exp_avg_sq"].numpy().copy()
            arrays[f"s{i}"] = np.array(float(st["step"]))
    for i, (w, b) in enumerate(best_layers):
        arrays[f"bw{i}"], arrays[f"bb{i}"] = w, b
    return arrays


def _restore(path: Path, net: Any, opt: Any) -> list:
    """The checkpoint ``path``'s weights and Adam's state put into ``net`` and ``opt``; the kept epoch's layers."""
    import torch

    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
        params = list(net.parameters())
        with torch.no_grad():
            for i, p in enumerate(params):
                p.copy_(torch.from_numpy(arrays[f"p{i}"]))
                if f"m{i}" in arrays:
                    opt.state[p] = {"step": torch.tensor(float(arrays[f"s{i}"])),
                                    "exp_avg": torch.from_numpy(arrays[f"m{i}"].copy()),
                                    "exp_avg_sq": torch.from_numpy(arrays[f"v{i}"].copy())}  # fmt: skip
        return [(arrays[f"bw{i}"], arrays[f"bb{i}"]) for i in range(len(params) // 2)]
    except (OSError, ValueError, KeyError, RuntimeError, EOFError, TypeError, zipfile.BadZipFile, zlib.error) as err:
        raise RunFolderError(f"checkpoint {str(path)!r} is not a checkpoint of this fit ({type(err).__name__}: "
                             f"{err}); move checkpoints/ away to start the fit again") from None  # fmt: skip


def fit(config: FitConfig, log: Any = print, stop_after: int | None = None) -> Path:
    """Fit the scorer on ``config.data`` into ``config.out`` (see the module docstring), resuming
    after the checkpoint's epoch; ``stop_after``: return after that epoch (a stand-in for a kill
    in the tests).  The path of the scorer file."""
    config.validate()
    # one process per fit folder (a second stops with a line naming the first), its knobs claimed
    with claimed_folder(config.out, config, FIT_PROCESS_KNOBS, "fit", log) as out:
        return _fit(config, out, log, stop_after)


def _fit(config: FitConfig, out: Path, log: Any, stop_after: int | None) -> Path:
    import torch

    from agents.scorer.scorer import CANDIDATE_SIZE, GREEDY_SLOT, ActionScorer

    from ..scorer_fit import candidate_scores, fit_epoch, network_layers, ranking_loss, regret, scorer_network

    run = RunFolder(out, recipe_knobs(config, FIT_PROCESS_KNOBS), echo=log)
    saved = run.open_checkpoint(FIT_STATE)  # a killed swap finished, partial files gone, tables cut to it
    torch.set_num_threads(config.torch_threads)
    t0 = time.perf_counter()
    d = load_labels(config.data, config.positions)
    valid = d["actions"] >= 0
    held = d["game"] % config.holdout == 0
    train, test = np.flatnonzero(~held), np.flatnonzero(held)
    if not len(train) or not len(test):
        raise ValueError(f"{len(train)} training and {len(test)} held-out positions: need both (more games?)")
    X, V, Q = torch.from_numpy(d["x"]), torch.from_numpy(valid), torch.from_numpy(d["q"])  # noqa: N806
    greedy = np.where(valid[test], d["x"][test, :, GREEDY_SLOT].astype(np.float32), -1.0)
    greedy_regret = regret(greedy, valid[test], d["q"][test])
    run.log(f"{len(train)} training positions, {len(test)} held out ({time.perf_counter() - t0:.0f} s to read); "
        f"greedy's held-out regret {greedy_regret:.5f}")  # fmt: skip

    net = scorer_network((CANDIDATE_SIZE, *config.hidden, 1), derive_seed(config.seed, DISTILL_FIT), config.pool())
    opt = torch.optim.Adam(net.parameters(), lr=config.lr)
    per_epoch = -(-len(train) // config.batch)
    total = config.epochs * per_epoch

    def export() -> list[tuple[np.ndarray, np.ndarray]]:
        return [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in network_layers(net)]

    def scores(idx: np.ndarray) -> np.ndarray:
        return candidate_scores(net, X, V, idx, 4096)

    evaluate = None
    if config.eval_games:
        evaluate = Evaluator(run, config.eval_opponents, config.best_by, games=config.eval_games,
                             seed=config.eval_seed, rules=config.rules, jobs=config.processes,
                             xlabel="positions trained on", regret_table="fit.csv")  # fmt: skip

    def strength(positions: int, stage: str) -> None:
        """The network on the duplicate deals of ``conquian-evaluate --seed eval_seed`` (the shared evaluator)."""
        if evaluate is not None:
            evaluate(ScorerModel(ActionScorer(export(), pool_after=config.pool())), positions, stage=stage)

    def checkpoint(epoch: int) -> None:
        arrays = _checkpoint_arrays(net, opt, best["layers"])
        run.state.update(epochs_done=epoch + 1, step=step, best_regret=best["regret"])
        run.save_checkpoint_files({"latest.npz": lambda path: np.savez(path, **arrays)}, (epoch + 1) * len(train))

    done, step, best = -1, 0, {"regret": math.inf, "layers": export()}
    if saved is not None:
        best = {"regret": run.state["best_regret"], "layers": _restore(run.checkpoints / "latest.npz", net, opt)}
        done, step = run.state["epochs_done"] - 1, run.state["step"]
        run.log(f"resumed after epoch {done}")
    else:
        strength(0, "start")  # step 0: the untrained network, played once (its rows are in every checkpoint)
    for epoch in range(done + 1, config.epochs):
        t1 = time.perf_counter()
        order = np.random.default_rng(derive_seed(config.seed, DISTILL_FIT, epoch)).permutation(train)
        total_loss, batches = fit_epoch(opt, order, config.batch, ranking_loss(net, X, V, Q, config.temperature),
                                        lr=lambda k: _lr(config, k, total), step=step)  # fmt: skip
        step += batches
        held_regret = regret(scores(test), valid[test], d["q"][test])
        part = train[:20000]
        kept = held_regret < best["regret"]
        if kept:
            best = {"regret": held_regret, "layers": export()}
        row = {"epoch": epoch, "labels": (epoch + 1) * len(train), "loss": round(total_loss / per_epoch, 5),
               "held_out_regret": round(held_regret, 5),
               "share_of_greedy": round(held_regret / greedy_regret, 4) if greedy_regret else None,
               "train_regret": round(regret(scores(part), valid[part], d["q"][part]), 5),
               "greedy_held_out_regret": round(greedy_regret, 5), "kept": kept,
               "s": round(time.perf_counter() - t1, 1)}  # fmt: skip
        run.append_csv("fit.csv", [row])
        strength((epoch + 1) * len(train), f"epoch{epoch}")
        checkpoint(epoch)  # the tables' rows above are its own: a resume cuts what came after
        run.log(f"epoch {epoch}: held-out regret {held_regret:.5f} ({held_regret / greedy_regret:.3f} of greedy's "
            f"{greedy_regret:.5f}), train {row['train_regret']:.5f}{' kept' if kept else ''} "
            f"({row['s']:.0f} s)")  # fmt: skip
        if stop_after is not None and epoch >= stop_after:
            return run.checkpoints
    meta = {"recipe": "conquian-train distill", "data": list(config.data), "positions": int(len(train)),
            "held_out_regret": round(best["regret"], 5), "greedy_held_out_regret": round(greedy_regret, 5),
            "temperature": config.temperature}  # fmt: skip
    scorer = ActionScorer(best["layers"], meta, config.pool())
    path = run.write_file("scorer.npz", scorer.save)
    run.log(f"wrote {path} (held-out regret {best['regret']:.5f}, greedy's {greedy_regret:.5f})")
    return path


# --------------------------------------------------------------------------- the command


def quick(root: Path, workers: int) -> list[tuple[Path, list[str], list[str]]]:
    """The recipe at a tiny size (:data:`conquian_train.recipes.QuickRun`): ``make train``'s two steps."""
    labels, fit = root / "labels", root / "fit"
    generate = ["generate", "--out", str(labels), "--games", "12", "--chunk", "6", "--playouts", "2", "--seed", "5"]
    fit_ = ["fit", "--data", str(labels), "--out", str(fit), "--hidden", "8", "--epochs", "2", "--holdout", "3",
            "--batch", "64", "--eval-games", "4", "--seed", "3", "--workers", str(workers)]  # fmt: skip
    return [(labels, generate, generate), (fit, fit_, fit_)]  # a step: the same command resumes


RECIPE = steps_recipe(
    "distill", "the deep-sets action scorer: greedy's games valued by flat Monte Carlo, then the fit", __doc__,
    {"generate": ("play and label games (resumes)", GenerateConfig, generate),
     "fit": ("fit the scorer (resumes)", FitConfig, fit)},
    quick,
)  # fmt: skip
#: ``conquian-train distill generate|fit``: the labels (resumable), then the fit (resumable); an exit status
main = RECIPE.main

if __name__ == "__main__":
    sys.exit(main())
