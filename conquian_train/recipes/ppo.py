"""The PPO recipe (``conquian-train ppo``): a behaviour-cloning warm start, then MaskablePPO self-play.

Usage::

    conquian-train ppo --out runs/ppo                 # make train-ppo
    conquian-train ppo --total-steps 2000000 --out runs/long
    conquian-train ppo --resume runs/long             # continue a run where it stopped
    conquian-train ppo --export runs/long/best.zip model.zip   # a small file to ship (no optimizer state)
    conquian-train ppo --help                         # every knob, with its meaning

(``python train.py ppo ...`` is the same.)  Every knob is a field of :class:`TrainConfig` (the shared ones of
:class:`conquian_train.settings.RunSettings` among them); the config is printed and saved as ``config.json``.

The recipe
    1. **Warm start** (``bc_games`` > 0): the ``teacher`` bot plays ``bc_games`` games against
       the ``bc_opponents``; the policy imitates its decisions and the value head predicts the
       results (:mod:`conquian_train.warm_start`, the loss in :mod:`conquian_train.imitation`), then
       ``dagger_rounds`` rounds of DAgger.
    2. **PPO** (sb3-contrib ``MaskablePPO``, the legal-action mask applied to every
       decision): the learner plays one seat (drawn each game) in ``n_envs`` games of the batched
       engine (:mod:`conquian_train.envs`), each against an opponent drawn from the pool
       ``opponents``: bot specs, ``self`` (the latest snapshot) and ``past`` (an older one).
    3. **Evaluation** every ``eval_every`` steps: the deterministic policy against each of
       ``eval_opponents`` on the duplicate deals that ``conquian-evaluate --seed eval_seed``
       plays (:mod:`conquian_train.evaluation`): ``eval.csv``, ``learning_curve.png``,
       ``best.zip`` (best score against ``best_by``), ``final.zip`` (the last model).

The run folder (``out``): ``config.json``, ``train.log``, ``eval.csv``, ``learning_curve.png``,
``bc.csv``, ``tb/`` (TensorBoard), ``checkpoints/`` (``latest.zip``, ``state.json``,
``snapshots.npz`` for ``--resume``), ``best.zip``, ``final.zip``, ``run.lock``.  Play a result with
``python evaluate.py ppo:runs/NAME/best.zip greedy``.  The progress bar is shown when standard
error is a terminal (``--progress`` / ``--no-progress`` to choose).

A **checkpoint** (``checkpoints/``: ``latest.zip``, ``snapshots.npz``, ``state.json``, swapped in
whole) is taken at the start of a rollout, at step 0 (after the warm start) and every
``checkpoint_every`` steps.  Each checkpoint begins a *segment*: the games in progress are
dropped, the games are dealt anew and the random numbers (torch's, numpy's, the opponent pool's
and its bots') start again from ``derive_seed(seed, PPO_SEGMENT, step)``.  A resumed run begins
its segment the same way, so it makes the very rollouts, updates, evaluations and files of the
run that was never stopped.  What a stopped session did after its last checkpoint is done again
(docs/training.md, "Run folders").

On a small machine keep torch to few threads (``torch_threads``, default 1): next to
environment worker processes, torch's default threading can slow training many-fold.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.networks.ppo import stamp_model
from agents.registry import make_agent
from conquian_arena import knobs, runfiles
from conquian_arena.knobs import knob
from conquian_env.seeding import derive_seed

from .. import recipes
from ..callbacks import CheckpointEvery, EvaluateEvery, ProgressCallback, SnapshotEvery, TrainingLog
from ..envs import make_vec_env
from ..evaluation import Evaluator
from ..imitation import ImitationSettings
from ..policy_files import export_model
from ..pool import parse_pool
from ..run import PPO_START, PPO_STATE, RunFolder, RunFolderError
from ..seeding import PPO_SEGMENT
from ..settings import RunSettings, recipe_knobs
from ..warm_start import WarmStart, warm_start
from . import Recipe, parser, run_recipe


@dataclass
class TrainConfig(RunSettings):
    """Every knob of a PPO run (see the module docstring for the recipe): the shared ones of
    :class:`~conquian_train.settings.RunSettings` and the PPO recipe's own."""

    total_steps: int = knob(
        1_000_000,
        "PPO learner decisions in total (the warm start not counted), rounded up to whole rollouts of n_envs x n_steps",
        low=1,
    )
    device: str = knob("cpu", "torch device of the learner ('cpu', 'cuda', 'auto'); workers always use numpy")
    features: str = knob(
        "meld", "policy input: 'meld' (raw observation + meld-aware features) or 'raw'", choices=("meld", "raw")
    )
    net_arch: tuple[int, ...] = knob((256, 256), "hidden layer sizes of the policy and value networks")
    # warm start
    bc_games: int = knob(4000, "games the teacher plays for the behaviour-cloning warm start (0: none)", low=0)
    teacher: str = knob("greedy", "bot spec of the teacher imitated in the warm start", spec=True)
    bc_opponents: tuple[str, ...] = knob(
        ("greedy", "random"), "bot specs the teacher plays in the warm start", spec=True
    )
    bc_epochs: int = knob(4, "passes over the warm-start data", low=1)
    bc_lr: float = knob(1e-3, "learning rate of the warm start", above=0)
    bc_smoothing: float = knob(
        0.05, "label smoothing over the legal actions (keeps exploration for PPO)", low=0, below=1
    )
    bc_temperature: float = knob(
        0.02,
        "where a searching teacher (rollout) gives action values, logits times T regress them (0: hard labels)",
        low=0,
    )
    bc_data: str = knob("", "reuse the warm-start data set (bc_data.npz) of an earlier run instead of playing")
    dagger_rounds: int = knob(0, "DAgger rounds after the warm start: the policy plays, the teacher labels", low=0)
    dagger_games: int = knob(1000, "games the policy plays per DAgger round", low=0)
    # PPO
    n_envs: int = knob(0, "parallel games the learner plays, all in one compiled engine (0: 256)", low=0)
    opponents: tuple[str, ...] = knob(
        ("greedy@4", "random@1", "self@2", "past@1"),
        "opponent pool, SPEC@WEIGHT: any bot spec, 'self' (latest snapshot), 'past' (an older one)",
        spec=True,
    )
    snapshot_every: int = knob(100_000, "learner steps between snapshots of the policy for the pool", low=0)
    max_snapshots: int = knob(10, "snapshots kept in the pool (oldest dropped)", low=1)
    learning_rate: float = knob(1e-4, "PPO learning rate (Adam)", above=0)
    n_steps: int = knob(512, "steps per environment per PPO rollout", low=1)
    batch_size: int = knob(512, "PPO minibatch size", low=1)
    n_epochs: int = knob(4, "PPO epochs per rollout", low=1)
    gamma: float = knob(1.0, "discount (the only reward is the result at the end)", low=0, high=1)
    gae_lambda: float = knob(0.95, "GAE lambda", low=0, high=1)
    clip_range: float = knob(0.1, "PPO clip range", above=0)
    ent_coef: float = knob(0.003, "entropy bonus", low=0)
    vf_coef: float = knob(0.5, "value loss weight", low=0)
    target_kl: float = knob(0.03, "stop an update's epochs early past this KL (0: never)", low=0)
    # evaluation and output (the shared knobs: conquian_train.settings)
    eval_every: int = knob(250_000, "learner steps between evaluations (0: only at the end)", low=0)
    checkpoint_every: int = knob(250_000, "learner steps between checkpoints", low=0)
    progress: bool | None = knob(None, "progress bar on standard error (default: when it is a terminal)")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the knob that is wrong (before any work starts)."""
        knobs.check(self)  # every knob's type and declared range
        if self.bc_data and not Path(self.bc_data).is_file():
            raise ValueError(f"bc_data {self.bc_data!r} is not a file")
        self.imitation()  # the warm start's knobs check themselves
        if not self.net_arch or any(int(n) < 1 for n in self.net_arch):
            raise ValueError(f"net_arch must be positive layer sizes, got {self.net_arch!r}")
        self.validate_run()  # best_by among the evaluation opponents, their specs
        if not self.opponents:
            raise ValueError("the opponent pool is empty")
        parse_pool(self.opponents)
        for spec in (self.teacher, *self.bc_opponents):
            make_agent(spec, 0)  # a bad spec fails now, not after an hour

    def validate_new_run(self) -> None:
        """Refuse a new run shorter than one PPO rollout (PPO learns once per rollout): said before
        anything is played, with the knobs that make a rollout shorter."""
        if self.total_steps < self.rollout_steps:
            raise ValueError(
                f"total_steps {self.total_steps:,} is below one PPO rollout of {self.rollout_steps:,} steps "
                f"({self.games_in_parallel} games x n_steps {self.n_steps}), and PPO updates once per rollout: "
                f"give --total-steps {self.rollout_steps} or more, or shorter rollouts (--n-envs 32 --n-steps 64: "
                "2,048 steps; the quick preset of the documentation's Training page)"
            )

    @property
    def rollout_steps(self) -> int:
        """The learner steps of one PPO rollout (``games_in_parallel x n_steps``)."""
        return self.games_in_parallel * self.n_steps

    def end_step(self, start: int = 0) -> int:
        """The step a run from ``start`` ends at: ``total_steps`` rounded up to whole rollouts."""
        remaining = self.total_steps - start
        return start + max(0, -(-remaining // self.rollout_steps) * self.rollout_steps)

    @property
    def games_in_parallel(self) -> int:
        """``n_envs``, or its automatic value."""
        return self.n_envs or 256

    def imitation(self) -> ImitationSettings:
        """The warm start's loss settings (the ``bc_*`` knobs)."""
        return ImitationSettings(
            epochs=self.bc_epochs, lr=self.bc_lr, smoothing=self.bc_smoothing, temperature=self.bc_temperature,
            value_coef=self.vf_coef,
        )  # fmt: skip

    def ppo(self) -> dict[str, Any]:
        """MaskablePPO's keyword arguments."""
        return dict(
            learning_rate=self.learning_rate, n_steps=self.n_steps, batch_size=self.batch_size,
            n_epochs=self.n_epochs, gamma=self.gamma, gae_lambda=self.gae_lambda, clip_range=self.clip_range,
            ent_coef=self.ent_coef, vf_coef=self.vf_coef, target_kl=self.target_kl or None,
            policy_kwargs={"net_arch": {"pi": list(self.net_arch), "vf": list(self.net_arch)}},
            seed=self.seed, device=self.device, verbose=0,
        )  # fmt: skip

    def warm_start(self) -> WarmStart:
        """The warm start's knobs (``bc_*``, ``dagger_*``)."""
        return WarmStart(
            games=self.bc_games, teacher=self.teacher, opponents=self.bc_opponents, data=self.bc_data,
            dagger_rounds=self.dagger_rounds, dagger_games=self.dagger_games, features=self.features,
            rules=self.rules, seed=self.seed, processes=self.processes, imitation=self.imitation(),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return knobs.to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return knobs.from_dict(cls, data)


#: the knobs a resume may change; the rest of ``config.json`` is the run's recipe
MAY_CHANGE = ("total_steps", "progress", "workers", "torch_threads")


def recipe(config: Any) -> dict[str, Any]:
    """The knobs that make the run what it is (a checkpoint refuses a ``config.json`` that changed them)."""
    return recipe_knobs(config, ("out", *MAY_CHANGE))


def start_segment(model: Any, seed: int, step: int) -> None:
    """New deals in every game and every random number from ``derive_seed(seed, PPO_SEGMENT, step)``:
    what the learner meets from ``step`` on depends on the weights and the step alone."""
    from stable_baselines3.common.utils import set_random_seed

    s = derive_seed(seed, PPO_SEGMENT, step)
    set_random_seed(s % 2**32)
    model.action_space.seed(s % 2**32)
    model.env.seed(s % 2**31)
    model._last_obs = model.env.reset()  # SB3 keeps the observations the next rollout starts from here
    model._last_episode_starts = np.ones((model.env.num_envs,), dtype=bool)


def holds_run(out) -> bool:
    """A PPO run is in ``out`` once it has a checkpoint (a folder without one starts afresh)."""
    return (out / "checkpoints").exists() or (out / "checkpoints.ready").exists()


def train_ppo(config: Any, resume: bool = False) -> dict[str, Any]:
    """The recipe: environments -> new or resumed model -> warm start -> PPO with callbacks -> save.

    ``config`` is a :class:`TrainConfig`.  Returns the run state."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import CallbackList

    c, run = config, RunFolder(config.out, recipe(config), start=PPO_START)
    torch.set_num_threads(c.torch_threads)
    run.out.mkdir(parents=True, exist_ok=True)
    if not resume:  # said first, not after the warm start
        end = c.end_step()
        run.log(f"PPO collects whole rollouts of {c.rollout_steps:,} steps ({c.games_in_parallel} games x n_steps "
                f"{c.n_steps}), one policy update each: "
                + (f"this run ends at step {end:,}, not {c.total_steps:,}" if end != c.total_steps
                   else f"{end:,} steps in {end // c.rollout_steps:,} rollouts"))  # fmt: skip
    venv = make_vec_env(c.opponents, c.games_in_parallel, features=c.features, rules=c.rules, seed=c.seed,
                        max_snapshots=c.max_snapshots)  # fmt: skip
    model = MaskablePPO("MlpPolicy", venv, tensorboard_log=str(run.out / "tb"), **c.ppo())
    stamp_model(model, c.features)  # its files carry the feature set and layout hash
    evaluate = Evaluator(run, c.eval_opponents, c.best_by, games=c.eval_games, seed=c.eval_seed, rules=c.rules,
                         batched=True, jobs=c.processes)  # fmt: skip
    if resume:
        resumed = run.resume(model, c.features)
    elif run.open_checkpoint(PPO_STATE) is not None:
        raise RunFolderError(f"{run.out} already holds a run: use --resume {run.out} or another --out")
    else:
        resumed = False
    if resumed:
        run.log(f"resumed {run.out} at step {model.num_timesteps:,}")
        start_segment(model, c.seed, model.num_timesteps)
    else:
        if resume:
            run.log(f"{run.out} holds no checkpoint yet: the run starts from its beginning")
        warmed = bool(c.bc_games or c.bc_data)
        if warmed:
            warm_start(model.policy, c.warm_start(), run, lambda stage: evaluate(model, 0, stage=stage))
        evaluate(model, 0, stage="warm start" if warmed else "init")
        run.state.update(next_eval=c.eval_every, next_snapshot=0, next_checkpoint=0)
    callbacks = [
        SnapshotEvery(run, c.snapshot_every, c.max_snapshots),
        EvaluateEvery(run, evaluate, c.eval_every),
        CheckpointEvery(run, c.checkpoint_every, lambda step: start_segment(model, c.seed, step)),
    ]
    end = c.end_step(model.num_timesteps)
    callbacks.append(TrainingLog(run, end))
    if c.progress if c.progress is not None else sys.stderr.isatty():
        callbacks.insert(0, ProgressCallback(end))
    remaining = c.total_steps - model.num_timesteps
    if resumed and remaining > 0 and end != c.total_steps:
        run.log(f"PPO collects whole rollouts of {c.rollout_steps:,} steps ({c.games_in_parallel} games x n_steps "
                f"{c.n_steps}): this run ends at step {end:,}, not {c.total_steps:,}")  # fmt: skip
    try:
        if remaining > 0:
            model.learn(remaining, callback=CallbackList(callbacks), reset_num_timesteps=not resumed,
                        tb_log_name="ppo")  # fmt: skip
    except KeyboardInterrupt:  # the last checkpoint stands: --resume goes on from it exactly
        run.log(f"interrupted at step {model.num_timesteps:,}: continue with --resume {run.out} (from the last "
                "checkpoint)")  # fmt: skip
        try:
            venv.close()
        except Exception:  # workers that got the Ctrl-C too are gone already
            pass
        raise
    if run.state.get("last_eval_step") != model.num_timesteps:
        evaluate(model, model.num_timesteps)
    venv.close()
    run.save_checkpoint(model)  # with the final evaluation's best score
    runfiles.copy_atomic(run.checkpoints / "latest.zip", run.out / "final.zip")  # the same model
    run.log(f"done: {model.num_timesteps:,} steps in {run.elapsed():.0f} s; best score vs {c.best_by} "
            f"{run.state['best_score']:.3f} at step {run.state['best_step']:,} -> {run.out / 'best.zip'}")  # fmt: skip
    return run.state


# --------------------------------------------------------------------------- the command


def build_parser(prog: str = "conquian-train ppo") -> argparse.ArgumentParser:
    """The recipe's command line: one flag per :class:`TrainConfig` field, ``--resume``, ``--export``."""
    made = parser(prog, "Train a Conquian agent (warm start + MaskablePPO self-play). Every option is a TrainConfig "
                  "field.", TrainConfig, formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                  epilog="other recipes: conquian-train --help")  # fmt: skip
    made.add_argument("--export", nargs=2, metavar=("MODEL", "DEST"), help="write MODEL (a .zip from a run) to "
                      "DEST without its optimizer state (a small file to ship), then exit")  # fmt: skip
    return made


def config_from_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    """The run's config from the command line (``--resume``: from the run's config.json, checked,
    its ``python:`` specs refused without ``--trust-code``) and whether it is resumed."""
    args = vars(build_parser().parse_args(argv))
    args.pop("export", None)
    return recipes.config_from_args(TrainConfig, args, MAY_CHANGE)


def main(argv: list[str] | None = None, prog: str = "conquian-train ppo") -> int:
    """``conquian-train ppo``: a new run (``--out``), ``--resume RUN`` or ``--export MODEL DEST``."""
    args = vars(build_parser(prog).parse_args(sys.argv[1:] if argv is None else argv))
    export = args.pop("export", None)
    if export:
        try:
            dest = export_model(*export)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"{dest}: {dest.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
        return 0
    return run_recipe(TrainConfig, args, MAY_CHANGE, lambda config, resume: train_ppo(config, resume=resume),
                      holds_run=holds_run, prog=prog)  # fmt: skip


def quick(root: Path, workers: int) -> list[tuple[Path, list[str], list[str]]]:
    """The recipe at a tiny size (:data:`conquian_train.recipes.QuickRun`)."""
    out = root / "run"
    start = [
        "--out", str(out), "--total-steps", "1024", "--bc-games", "20", "--bc-epochs", "1", "--n-envs", "2",
        "--n-steps", "256", "--batch-size", "128", "--n-epochs", "1", "--eval-every", "512", "--eval-games", "4",
        "--checkpoint-every", "512", "--snapshot-every", "256", "--workers", str(workers), "--no-progress",
        "--net-arch", "16",
    ]  # fmt: skip
    return [(out, start, ["--resume", str(out), "--no-progress", "--workers", str(workers)])]


RECIPE = Recipe("ppo", "warm start, then MaskablePPO self-play against an opponent pool", (TrainConfig,), main, quick)
