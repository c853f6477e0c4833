"""The named callbacks of ``MaskablePPO.learn`` (SB3's ``BaseCallback``; combine them in a ``CallbackList``).

Each acts at the start of a rollout, not at its end: SB3 updates the policy after
``_on_rollout_end``, so what was taken there saw the weights from before the update.  Their names
are not SB3's own (``EvalCallback``, ``CheckpointCallback`` do other things): :class:`EvaluateEvery`
plays this package's duplicate-deal evaluation, :class:`CheckpointEvery` writes a resumable run folder.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from agents.networks.ppo import NumpyPolicy
from conquian_env.extras import missing

from .evaluation import Evaluator
from .run import RunFolder

try:
    from stable_baselines3.common.callbacks import BaseCallback
except ImportError as err:
    raise missing(err, "conquian_train.callbacks") from None


class SnapshotEvery(BaseCallback):
    """Every ``every`` steps a snapshot of the learner joins the opponent pools (``self`` / ``past``)."""

    def __init__(self, run: RunFolder, every: int, max_snapshots: int):
        super().__init__()
        self.run, self.every, self.max_snapshots = run, max(1, every), max_snapshots

    def _on_rollout_start(self) -> None:
        step, state = self.model.num_timesteps, self.run.state
        if step >= state["next_snapshot"]:
            snapshot = NumpyPolicy.from_sb3(self.model.policy)
            self.training_env.env_method("add_snapshot", snapshot)
            self.run.snapshots = [*self.run.snapshots, snapshot][-self.max_snapshots :]
            state["snapshot_steps"].append(step)
            state["next_snapshot"] = step + self.every

    def _on_step(self) -> bool:
        return True


class EvaluateEvery(BaseCallback):
    """Every ``every`` steps (0: never) an evaluation (:class:`Evaluator`), and the opponents met so far."""

    def __init__(self, run: RunFolder, evaluate: Evaluator, every: int):
        super().__init__()
        self.run, self.evaluate, self.every = run, evaluate, every

    def _on_rollout_start(self) -> None:
        step = self.model.num_timesteps
        if self.every and step >= self.run.state["next_eval"]:
            self.evaluate(self.model, step)
            self.run.state["next_eval"] = step + self.every
            counts: dict[str, int] = {}
            for d in self.training_env.env_method("opponent_counts"):
                for k, v in d.items():
                    counts[k] = counts.get(k, 0) + v
            self.run.log(f"opponents so far: {counts}")

    def _on_step(self) -> bool:
        return True


class CheckpointEvery(BaseCallback):
    """Every ``every`` steps (0: never), from step 0 on, a checkpoint for ``--resume``, then
    ``on_checkpoint(step)`` (the PPO recipe starts a segment there); the elapsed time to TensorBoard."""

    def __init__(self, run: RunFolder, every: int, on_checkpoint: Callable[[int], None] | None = None):
        super().__init__()
        self.run, self.every, self.on_checkpoint = run, every, on_checkpoint

    def _on_rollout_start(self) -> None:
        step = self.model.num_timesteps
        if self.every and step >= self.run.state["next_checkpoint"]:
            self.run.state["next_checkpoint"] = step + self.every  # in the checkpoint: a resume goes on past it
            self.run.save_checkpoint(self.model)
            if self.on_checkpoint is not None:
                self.on_checkpoint(step)
        self.logger.record("conquian/elapsed_s", self.run.elapsed())

    def _on_step(self) -> bool:
        return True


class ProgressCallback(BaseCallback):
    """A tqdm bar of the learner's steps on standard error, to ``total`` (the step the run ends
    at); it says when the policy is being updated, the steps of the rollout all counted (the
    bar was left at 99% through the last update)."""

    def __init__(self, total: int):
        super().__init__()
        self.total = total

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, initial=self.model.num_timesteps, unit="step", dynamic_ncols=True,
                        file=sys.stderr)  # fmt: skip

    def _on_rollout_start(self) -> None:
        self.bar.set_postfix_str("playing", refresh=False)

    def _on_step(self) -> bool:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        return True

    def _on_rollout_end(self) -> None:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        self.bar.set_postfix_str("updating the policy", refresh=True)  # drawn now, whatever tqdm's interval

    def _on_training_end(self) -> None:
        self.bar.set_postfix_str("done", refresh=False)
        self.bar.close()


class TrainingLog(BaseCallback):
    """After each policy update (at most one line every ``every`` seconds, and the last one), a line
    in the run's log: the step, steps per second since the last line, the losses, the policy's
    entropy and the update's KL, read from SB3's logger (``train/*``, also in TensorBoard)."""

    #: SB3's names of what the line shows, and how it shows them
    SHOWN = (
        ("train/policy_gradient_loss", "policy loss", "{:+.4f}"),
        ("train/value_loss", "value loss", "{:.4f}"),
        ("train/entropy_loss", "entropy", "{:.3f}"),
        ("train/approx_kl", "KL", "{:.4f}"),
        ("train/clip_fraction", "clipped", "{:.3f}"),
    )

    def __init__(self, run: RunFolder, end: int, every: float = 20.0):
        super().__init__()
        self.run, self.end, self.every = run, end, every

    def _on_training_start(self) -> None:
        self.since, self.busy, self.mark, self.updates = self.model.num_timesteps, 0.0, None, 0

    def _on_step(self) -> bool:
        if self.mark is None:
            self.mark = time.monotonic()  # from the rollout's first step: the evaluations are not counted
        return True

    def _on_rollout_start(self) -> None:
        self.count_time()
        if self.updates and self.busy >= self.every:
            self.write()
        self.updates += 1

    def _on_training_end(self) -> None:
        self.count_time()
        if self.model.num_timesteps > self.since:
            self.write()

    def count_time(self) -> None:
        if self.mark is not None:
            self.busy += time.monotonic() - self.mark
            self.mark = None

    def write(self) -> None:
        step = self.model.num_timesteps
        rate = (step - self.since) / max(self.busy, 1e-9)
        values = self.model.logger.name_to_value
        parts = []
        for key, name, form in self.SHOWN:
            if key in values:
                value = -values[key] if key == "train/entropy_loss" else values[key]  # SB3 logs minus the entropy
                parts.append(f"{name} {form.format(value)}")
        self.run.log(f"step {step:,} of {self.end:,}: {rate:,.0f} steps/s (playing and updating)"
                     + ("; " + ", ".join(parts) if parts else ""))  # fmt: skip
        self.since, self.busy = step, 0.0
