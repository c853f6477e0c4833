"""Train a Conquian agent: behaviour-cloning warm start, then MaskablePPO self-play.

Usage::

    python train.py                                   # the default recipe (make train)
    python train.py --total-steps 2000000 --out runs/long
    python train.py --resume runs/long                # continue a run where it stopped
    python train.py --export runs/long/best.zip model.zip   # a small file to ship (no optimizer state)
    python train.py --help                            # every knob, with its meaning
    python train.py exit --out runs/exit              # expert iteration on the compiled search (conquian_train.exit)

Every knob is a field of :class:`TrainConfig` (its help text is the field's ``help``); the
command line is generated from it, and the config is printed and saved as ``config.json``.

The recipe
    1. **Warm start** (``bc_games`` > 0): the ``teacher`` bot plays ``bc_games`` games against
       the ``bc_opponents``; the policy imitates its decisions and the value head predicts the
       results (:mod:`conquian_train.warm_start`, the loss in :mod:`agents.imitation`), then
       ``dagger_rounds`` rounds of DAgger.
    2. **PPO** (sb3-contrib ``MaskablePPO``, the legal-action mask applied to every
       decision): the learner plays one seat (drawn each game) in ``n_envs`` games
       (:mod:`conquian_train.envs`), each against an opponent drawn from the pool
       ``opponents``: bot specs, ``self`` (the latest snapshot) and ``past`` (an older one).
    3. **Evaluation** every ``eval_every`` steps: the deterministic policy against each of
       ``eval_opponents`` on the duplicate deals that ``conquian-evaluate --seed eval_seed``
       plays (:mod:`conquian_train.evaluation`): ``eval.csv``, ``learning_curve.png``,
       ``best.zip`` (best score against ``best_by``), ``final.zip`` (the last model).

The run folder (``out``): ``config.json``, ``train.log``, ``eval.csv``, ``learning_curve.png``,
``bc.csv``, ``tb/`` (TensorBoard), ``checkpoints/`` (``latest.zip``, ``state.json``,
``snapshots.npz`` for ``--resume``: one checkpoint, swapped in whole), ``best.zip``, ``final.zip``,
``run.lock``; a killed run resumes exactly (docs/training.md, "Run folders").  Play a result with
``python evaluate.py ppo:runs/NAME/best.zip greedy``.  The progress bar is shown when
standard error is a terminal (``--progress`` / ``--no-progress`` to choose).

On a small machine keep torch to few threads (``torch_threads``, default 1): next to
environment worker processes, torch's default threading can slow training many-fold.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.batched import parse_pool
from agents.imitation import ImitationSettings
from agents.ppo import export_model
from agents.registry import make_agent
from conquian_train import knobs
from conquian_train.knobs import knob
from conquian_train.ppo import holds_run, train_ppo
from conquian_train.run import run_command
from conquian_train.warm_start import WarmStart


@dataclass
class TrainConfig:
    """Every knob of a training run (see the module docstring for the recipe)."""

    out: str = knob("runs/default", "run folder (config, logs, checkpoints, models)")
    seed: int = knob(0, "seed of everything in the run (deals, opponents, network init)", low=0)
    total_steps: int = knob(
        1_000_000,
        "PPO learner decisions in total (the warm start not counted), rounded up to whole rollouts of n_envs x n_steps",
        low=1,
    )
    forcing: bool = knob(False, "train and evaluate on the forcing variant (RULES.md section 7)")
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
    bc_smoothing: float = knob(0.05, "label smoothing over the legal actions (keeps exploration for PPO)")
    bc_smoothing_phases: tuple[str, ...] = knob(
        ("offer", "meld", "discard", "force"), "decision phases whose labels are smoothed (where PPO explores)"
    )
    bc_temperature: float = knob(
        0.02, "soft targets softmax(q / T) where a searching teacher (rollout) gives action values (0: hard labels)"
    )
    bc_loss: str = knob(
        "advantage",
        "how a searching teacher's action values are learned: 'advantage' (logits regress them, least squares)"
        " or 'softmax' (cross-entropy on softmax(q / T))",
        choices=("advantage", "softmax"),
    )
    bc_greedy_bonus: float = knob(
        0.0, "added to the teacher's value of greedy's choice: leave greedy only for a larger predicted gain"
    )
    bc_data: str = knob("", "reuse the warm-start data set (bc_data.npz) of an earlier run instead of playing")
    dagger_rounds: int = knob(0, "DAgger rounds after the warm start: the policy plays, the teacher labels", low=0)
    dagger_games: int = knob(1000, "games the policy plays per DAgger round", low=0)
    # PPO
    n_envs: int = knob(0, "parallel games the learner plays (0: 256 with vec_env 'batched', 8 otherwise)", low=0)
    vec_env: str = knob(
        "batched",
        "'batched' (all games in one compiled engine, opponents decide in batches: the fast path), "
        "'subproc' (SingleAgentEnv worker processes) or 'dummy' (SingleAgentEnvs in this process)",
        choices=("batched", "subproc", "dummy"),
    )
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
    # evaluation and output
    eval_every: int = knob(250_000, "learner steps between evaluations (0: only at the end)", low=0)
    eval_games: int = knob(600, "games per evaluation opponent (duplicate deals, seats swapped)", low=1)
    eval_opponents: tuple[str, ...] = knob(("random", "greedy"), "bot specs evaluated against", spec=True)
    eval_seed: int = knob(1_000_003, "deal seed of the evaluations (never used in training)", low=0)
    best_by: str = knob("greedy", "evaluation opponent whose score picks best.zip")
    checkpoint_every: int = knob(250_000, "learner steps between checkpoints", low=0)
    torch_threads: int = knob(1, "torch threads in this process (workers use numpy only)", low=1)
    workers: int = knob(0, "processes for warm-start games and evaluations (0: all cores)", low=0)
    progress: bool | None = knob(None, "progress bar on standard error (default: when it is a terminal)")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the knob that is wrong (before any work starts)."""
        knobs.check(self)  # every knob's type and declared range
        if self.bc_data and not Path(self.bc_data).is_file():
            raise ValueError(f"bc_data {self.bc_data!r} is not a file")
        self.imitation()  # the warm start's knobs check themselves
        if not self.net_arch or any(int(n) < 1 for n in self.net_arch):
            raise ValueError(f"net_arch must be positive layer sizes, got {self.net_arch!r}")
        if self.best_by not in self.eval_opponents:
            raise ValueError(f"best_by {self.best_by!r} must be one of eval_opponents {list(self.eval_opponents)}")
        if not self.opponents:
            raise ValueError("the opponent pool is empty")
        parse_pool(self.opponents)
        for spec in (self.teacher, *self.bc_opponents, *self.eval_opponents):
            make_agent(spec, 0)  # a bad spec fails now, not after an hour

    @property
    def games_in_parallel(self) -> int:
        """``n_envs``, or its automatic value for the ``vec_env`` kind."""
        return self.n_envs or (256 if self.vec_env == "batched" else 8)

    @property
    def processes(self) -> int:
        """``workers``, or all cores."""
        return self.workers or os.cpu_count() or 1

    def imitation(self) -> ImitationSettings:
        """The warm start's loss settings (the ``bc_*`` knobs)."""
        return ImitationSettings(
            epochs=self.bc_epochs, lr=self.bc_lr, smoothing=self.bc_smoothing,
            smoothing_phases=self.bc_smoothing_phases, temperature=self.bc_temperature, loss=self.bc_loss,
            greedy_bonus=self.bc_greedy_bonus, value_coef=self.vf_coef,
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
            forcing=self.forcing, seed=self.seed, processes=self.processes, imitation=self.imitation(),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return knobs.to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        return knobs.from_dict(cls, data)


# --------------------------------------------------------------------------- command line and main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Train a Conquian agent (warm start + MaskablePPO self-play). Every option is a TrainConfig field.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    knobs.add_resume_flags(parser)
    parser.add_argument("--export", nargs=2, metavar=("MODEL", "DEST"), help="write MODEL (a .zip from a run) to "
                        "DEST without its optimizer state (a small file to ship), then exit")  # fmt: skip
    return knobs.add_flags(parser, TrainConfig)


def config_from_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    """The run's config from the command line (``--resume``: from the run's config.json, checked,
    its ``python:`` specs refused without ``--trust-code``) and whether it is resumed."""
    args = vars(build_parser().parse_args(argv))
    resume, trust_code = args.pop("resume", None), args.pop("trust_code")
    args.pop("export", None)
    if not resume:
        return TrainConfig.from_dict(args), False
    may_change = ("total_steps", "progress", "workers", "torch_threads")
    return knobs.resumed(TrainConfig, resume, args, may_change, trust_code=trust_code), True


def train(config: TrainConfig, resume: bool = False) -> dict[str, Any]:
    """The recipe (:func:`conquian_train.ppo.train_ppo`): warm start, PPO with callbacks, checkpoints, save."""
    return train_ppo(config, resume=resume)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["exit"]:  # the expert-iteration recipe, its own knobs
        from conquian_train.exit import main as exit_main

        return exit_main(argv[1:])
    export = build_parser().parse_args(argv).export if argv is None or "--export" in argv else None
    if export:
        try:
            dest = export_model(*export)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print(f"{dest}: {dest.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
        return 0
    try:
        config, resume = config_from_args(argv)
        config.validate()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return run_command(config.out, config.to_dict(), resume, lambda: train(config, resume=resume),
                       holds_run=holds_run, command="python train.py --resume")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
