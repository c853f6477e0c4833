"""The run folder of every recipe: ``config.json`` claimed under the folder's lock, ``train.log``,
CSV tables, checkpoints and the run state (``checkpoints/state.json``); the one-line errors of a
training command (:func:`one_line_errors`).

Two ways in, one folder: a recipe with ``--resume`` (``ppo``, ``exit``) writes ``config.json``
(:func:`run_command`) and its checkpoint's recipe hash refuses a changed one; a recipe of steps
(``distill``, ``belief``) is resumed by the same command, its folder claimed
(:func:`claimed_folder`: ``config.json`` written when new, else compared).  Either way the work
is done in a :class:`RunFolder`.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agents.model_files import ModelFileError
from agents.networks.ppo import NumpyPolicy
from conquian_arena import knobs, runfiles
from conquian_arena.runfiles import RunFolderError

from .policy_files import load_snapshots, restore_checkpoint, save_snapshots

CSV_FILES = ("eval.csv", "bc.csv", "regret.csv", "rounds.csv", "fit.csv", "train.csv")
"""The run's append-only tables: a checkpoint records each one's size and hash (a resume cuts what came after)."""


#: the keys of ``checkpoints/state.json`` every recipe writes, and what each must be
COMMON_STATE: dict[str, str] = {
    "best_score": "number", "best_step": "count or null", "seconds": "number", "num_timesteps": "count",
    "last_eval_step": "count or null", "files": "files", "recipe": "text",
}  # fmt: skip


def check_state(data: Any, schema: dict[str, str], where: str) -> dict[str, Any]:
    """``data`` (a parsed ``state.json``) checked against ``schema`` (key -> kind) and
    :data:`COMMON_STATE`; raises :class:`RunFolderError` naming the first bad key."""
    if not isinstance(data, dict):
        raise RunFolderError(f"{where}: not a JSON object")
    kinds = {**COMMON_STATE, **schema}
    unknown = sorted(set(data) - set(kinds))
    if unknown:
        raise RunFolderError(f"{where}: unknown keys {unknown}; known: {sorted(kinds)}")

    def count(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def tables(v: Any) -> bool:
        return (
            isinstance(v, dict)
            and all(
                isinstance(r, dict)
                and set(r) == {"bytes", "sha256"}
                and count(r["bytes"])
                and isinstance(r["sha256"], str)
                for r in v.values()
            )
            and set(v) <= set(CSV_FILES)
        )

    tests = {
        "count": count, "count or null": lambda v: v is None or count(v), "number": number,
        "text": lambda v: isinstance(v, str), "list of counts": lambda v: isinstance(v, list) and all(map(count, v)),
        "object": lambda v: isinstance(v, dict), "files": tables,
    }  # fmt: skip
    for key, value in data.items():
        if not tests[kinds[key]](value):
            raise RunFolderError(f"{where}: {key} is {value!r}, expected {'a ' * (kinds[key] != 'files')}{kinds[key]}"
                                 + (" (table name -> {bytes, sha256})" if kinds[key] == "files" else ""))  # fmt: skip
    return data


def recipe_hash(recipe: dict[str, Any]) -> str:
    """A short hash of the knobs that make a run what it is (the config less what may change on resume)."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


class RunFolder:
    """One run's folder and the state that ``--resume`` reads back.

    The state and the model are written together as one checkpoint (``checkpoints/``, swapped in
    whole: :func:`conquian_arena.runfiles.commit_dir`) with the size and hash of every CSV table; a
    resume (:meth:`open_checkpoint`) finishes an interrupted swap, checks the state and cuts the
    tables back to what the checkpoint holds, so nothing a killed session wrote after it counts.
    """

    def __init__(self, out: str | Path, recipe: dict[str, Any] | None = None,
                 echo: Callable[[str], Any] | None = None, start: dict[str, Any] | None = None):  # fmt: skip
        """``start``: the recipe's own keys of the state at the run's beginning (e.g. :data:`PPO_START`)."""
        self.out = Path(out)
        self.echo = echo  # where a log line goes beside train.log (None: standard error, time-stamped)
        start = copy.deepcopy(start or {})  # its lists grow in place
        self.state: dict[str, Any] = {"best_score": -1.0, "best_step": None, "seconds": 0.0, **start}
        self.recipe = recipe_hash(recipe) if recipe is not None else None
        self.recipe_settings = recipe
        self.snapshots: list[NumpyPolicy] = []  # the pool's snapshots, newest last (also in the games' pools)
        self.t_start = time.time()

    @property
    def checkpoints(self) -> Path:
        return self.out / "checkpoints"

    def log(self, text: str) -> None:
        """A time-stamped line in ``train.log``, and on standard error (or to ``echo``)."""
        line = f"[{time.strftime('%H:%M:%S')}] {text}"
        if self.echo is None:
            print(line, file=sys.stderr, flush=True)
        else:
            self.echo(text)
        runfiles.append_line(self.out / "train.log", line)

    def elapsed(self) -> float:
        """Seconds of training so far, over every session of a resumed run."""
        return self.state["seconds"] + time.time() - self.t_start

    def append_csv(self, name: str, rows: list[dict[str, Any]]) -> None:
        """Append ``rows`` to the CSV file ``name`` (its header from the first row when new)."""
        runfiles.append_rows(self.out / name, rows)

    def write_file(self, name: str, write: Callable[[Path], Any]) -> Path:
        """The file ``name`` in the run folder, written by ``write(tmp)`` then renamed (atomic)."""
        return runfiles.write_atomic(self.out / name, write)

    def save_model(self, model, name: str) -> Path:
        """``model.save`` to ``name`` in the run folder, atomically."""
        return self.write_file(name, model.save)

    # ---------------------------------------------------------------- checkpoints

    def open_checkpoint(self, schema: dict[str, str]) -> dict[str, Any] | None:
        """Ready the folder for work: an interrupted checkpoint swap finished, temporary files of a
        killed writer deleted, and the checkpoint's state (checked against ``schema`` and the run's
        recipe) put into :attr:`state`; the CSV tables cut back to it.  ``None`` when the folder
        holds no checkpoint (the tables are then deleted: the run starts from nothing)."""
        self.out.mkdir(parents=True, exist_ok=True)
        done = runfiles.recover_dir(self.checkpoints)
        if done:
            self.log(done)
        for folder in (self.out, self.checkpoints, self.out / "labels"):
            if folder.is_dir() and (gone := runfiles.remove_partials(folder)):
                self.log(f"deleted the half-written {', '.join(gone)} of a killed session")
        path = self.checkpoints / "state.json"
        if runfiles.check_entry(self.checkpoints, "folder") and not runfiles.check_entry(path):
            aside = self.aside(self.checkpoints, "incomplete")
            self.log(f"{self.checkpoints} has no state.json (an incomplete checkpoint of an older version): set "
                     f"aside as {aside.name}; the run starts from its beginning")  # fmt: skip
        if not path.exists():
            for name in CSV_FILES:
                if note := runfiles.cut_to(self.out / name, None):
                    self.log(note)
            return None
        try:
            data = json.loads(runfiles.read_text(path))
        except RunFolderError:
            raise
        except (ValueError, UnicodeDecodeError, RecursionError) as err:
            raise RunFolderError(f"{path} is not JSON ({err})") from err
        check_state(data, schema, str(path))
        saved = data.get("recipe")
        if saved is not None and self.recipe is not None and saved != self.recipe:
            raise RunFolderError(f"{self.out / 'config.json'} differs from the recipe the run's checkpoint was made "
                                 f"with (hash {self.recipe} against {saved}): was it edited? Restore it, or start a "
                                 "new run with --out")  # fmt: skip
        records = data.pop("files", None)
        if records is None:
            self.log("the checkpoint predates the CSV tables' record: the tables are kept as they are")
        else:
            for name in CSV_FILES:
                if note := runfiles.cut_to(self.out / name, records.get(name)):
                    self.log(note)
        data.pop("recipe", None)
        self.state.update(data)
        return data

    def save_checkpoint_files(self, writers: dict[str, Callable[[Path], Any]], num_timesteps: int) -> None:
        """One checkpoint: each ``writers[name](path)`` writes a file into a fresh folder, then
        ``state.json`` (the state, the recipe, the tables' sizes and hashes); the folder replaces
        ``checkpoints/`` whole."""
        staged = runfiles.staging_dir(self.checkpoints)
        state = {**self.state, "seconds": self.elapsed(), "num_timesteps": num_timesteps}
        if self.recipe is not None:
            state["recipe"] = self.recipe
        state["files"] = {name: runfiles.committed(self.out / name) for name in CSV_FILES if (self.out / name).exists()}
        writers = {**writers, "state.json": lambda path: path.write_text(json.dumps(state, indent=2))}
        try:
            for name, write in writers.items():
                write(staged / name)
                runfiles.fsync_path(staged / name)
                runfiles.file_event(f"wrote {staged / name}")
        except Exception:  # a full disk: what was half written goes, the last checkpoint stands
            shutil.rmtree(staged, ignore_errors=True)
            raise
        runfiles.commit_dir(staged, self.checkpoints)

    def aside(self, path: Path, why: str) -> Path:
        """Rename ``path`` to ``path.WHY`` (``path.WHY2`` ... when taken): kept, out of the way."""
        return runfiles.set_aside(path, why)

    # ---------------------------------------------------------------- the PPO recipe's checkpoint

    def resume(self, model, features: str) -> bool:
        """Put the checkpoint's weights, counters, snapshots and run state into the fresh ``model``;
        ``False`` (nothing changed) when the folder holds no checkpoint."""
        if self.open_checkpoint(PPO_STATE) is None:
            return False
        restore_checkpoint(model, self.checkpoints / "latest.zip", features)  # weights only: no code runs
        self.snapshots = load_snapshots(self.checkpoints / "snapshots.npz", features)
        for snapshot in self.snapshots:
            model.get_env().env_method("add_snapshot", snapshot)
        return True

    def save_checkpoint(self, model) -> None:
        """The model, the snapshot pool and the run state: one checkpoint."""
        self.save_checkpoint_files(
            {"latest.zip": model.save, "snapshots.npz": lambda p: save_snapshots(p, self.snapshots)},
            model.num_timesteps,
        )


#: the PPO recipe's keys of ``state.json`` (beside :data:`COMMON_STATE`)
PPO_STATE: dict[str, str] = {
    "next_eval": "count", "next_snapshot": "count", "next_checkpoint": "count", "snapshot_steps": "list of counts",
}  # fmt: skip
#: the PPO recipe's (and self-play's) keys of the state at a run's beginning
PPO_START: dict[str, Any] = {"next_eval": 0, "next_snapshot": 0, "next_checkpoint": 0, "snapshot_steps": []}


def claim_config(out: Path, config: Any, ignore: tuple[str, ...], what: str) -> None:
    """``out`` holds ``config``'s knobs in ``config.json``: written when it is new, else read
    strictly, completed with the defaults of knobs added since it was written, and compared (the
    knobs of ``ignore`` aside): a ``ValueError`` naming the knobs that differ (``what``: the
    folder's kind, "run" or "fit").  The caller holds the folder's lock (:func:`claimed_folder`),
    so no other process writes it between the check and the write."""
    saved = out / "config.json"
    mine = {k: v for k, v in knobs.to_dict(config).items() if k not in ignore}
    if saved.exists():
        data = knobs.read_config(saved)
        try:
            theirs = knobs.to_dict(knobs.from_dict(type(config), data))
        except ValueError as err:
            raise RunFolderError(f"{saved} is not a {what} of this command ({err}): it was made by another "
                                 "version or another command; use another --out") from None  # fmt: skip
        theirs = {k: v for k, v in theirs.items() if k not in ignore}
        if theirs != mine:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            raise RunFolderError(f"{out} holds a {what} with other knobs ({', '.join(diff)}): use another --out")
    else:
        out.mkdir(parents=True, exist_ok=True)
        runfiles.write_json(saved, knobs.to_dict(config))


@contextlib.contextmanager
def claimed_folder(out: str | Path, config: Any, ignore: tuple[str, ...], what: str,
                   log: Callable[[str], Any] | None = None) -> Iterator[Path]:  # fmt: skip
    """The folder ``out`` held (:func:`conquian_arena.runfiles.hold_folder`: one process at a time) with
    ``config`` claimed in it (:func:`claim_config`) while the block runs; the folder's path."""
    out = Path(out)
    with runfiles.hold_folder(out, log):
        claim_config(out, config, ignore, what)
        yield out


def one_line_errors(body: Callable[[], Any], out: str | Path, resume_with: str,
                    catch: tuple[type[BaseException], ...] = (RunFolderError,)) -> int:  # fmt: skip
    """``body()``'s exit status: 0, or one ``error:`` line on standard error for a folder in use
    (2), an error of ``catch`` (2: a bad folder content, a bad knob), a full disk (1: the run is
    intact up to its last checkpoint) and Ctrl-C (130); ``resume_with``: the command line that
    continues the run in ``out``."""
    try:
        body()
    except runfiles.RunFolderInUseError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: the run is kept up to its last checkpoint; continue with: {resume_with}",
              file=sys.stderr)  # fmt: skip
        return 130
    except catch as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        if (line := runfiles.misplaced(err)) is not None:
            print(f"error: {line}", file=sys.stderr)
            return 2
        if not runfiles.disk_full(err):
            raise
        where = f" writing {err.filename}" if err.filename else ""
        print(f"error: the disk is full{where}: the run in {out} is intact up to its last checkpoint; free some "
              f"space and continue with: {resume_with}", file=sys.stderr)  # fmt: skip
        return 1
    return 0


def run_command(out: str | Path, config: dict[str, Any], resume: bool, body: Callable[[], Any], *,
                holds_run: Callable[[Path], bool], command: str) -> int:  # fmt: skip
    """A training command in the run folder ``out``: its lock held (:func:`conquian_arena.runfiles.hold_folder`),
    a new run refused where ``holds_run(out)``, ``config.json`` written, ``body()`` run; an exit status
    (:func:`one_line_errors`; ``command``: the command line that resumes, e.g. ``python train.py --resume``)."""
    out = Path(out)

    def work() -> None:
        with runfiles.hold_folder(out, RunFolder(out).log):
            if not resume and holds_run(out):
                raise RunFolderError(f"{out} already holds a run: use --resume {out} or another --out")
            runfiles.write_json(out / "config.json", config)
            print(json.dumps(config, indent=2), file=sys.stderr)
            body()

    # a checkpoint's model file that cannot be read is named in one line, as a bad table or state is
    return one_line_errors(work, out, f"{command} {out}", catch=(RunFolderError, ModelFileError))


def plot_learning_curve(eval_csv: Path, png: Path, xlabel: str = "learner steps", x: str = "step",
                        regret_csv: Path | None = None) -> None:  # fmt: skip
    """Score with its interval against each evaluation opponent, by ``x`` (a column of ``eval_csv``);
    with ``regret_csv`` (columns ``labels``, ``held_out_regret``, ``greedy_held_out_regret``: expert
    iteration's fits) a second panel: the network's regret on held-out games, and greedy's."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    with runfiles.open_file(eval_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    regret = []
    if regret_csv is not None and runfiles.check_entry(regret_csv):
        with runfiles.open_file(regret_csv, newline="") as f:
            regret = list(csv.DictReader(f))
    fig, axes = plt.subplots(1, 2 if regret else 1, figsize=(12 if regret else 7, 4), squeeze=False)
    ax = axes[0, 0]
    for spec in dict.fromkeys(r["opponent"] for r in rows):
        sub = [r for r in rows if r["opponent"] == spec]
        xs = [int(r[x]) for r in sub]
        ax.plot(xs, [float(r["score"]) for r in sub], marker="o", label=f"vs {spec}")
        ax.fill_between(xs, [float(r["low"]) for r in sub], [float(r["high"]) for r in sub], alpha=0.2)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set(xlabel=xlabel, ylabel="score (win 1, draw 1/2), 95% interval", ylim=(0, 1))
    ax.legend()
    ax.grid(alpha=0.3)
    if regret:
        ax = axes[0, 1]
        xs = [int(r["labels"]) for r in regret]
        ax.plot(xs, [float(r["held_out_regret"]) for r in regret], marker="o", label="the network")
        ax.plot(xs, [float(r["greedy_held_out_regret"]) for r in regret], marker="s", ls="--", label="greedy")
        ax.set(xlabel=xlabel, ylabel="regret on held-out games (search values)", ylim=(0, None),
               title="lower is better: value lost per decision")  # fmt: skip
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    runfiles.write_atomic(png, lambda tmp: fig.savefig(tmp, dpi=100))
    plt.close(fig)
