"""The self-play recipe (``conquian-train selfplay``): reinforcement learning from scratch at the engine's speed.

::

    conquian-train selfplay --out runs/selfplay                  # make train-selfplay (a short preset)
    conquian-train selfplay --total-frames 1000000000 --out runs/long
    conquian-train selfplay --resume runs/long                   # continue a run where it stopped
    conquian-train selfplay --help                               # every knob, with its meaning

The loop runs directly over the batched engine (:class:`conquian_env.vector.VectorGame`), not a
vector env and not Stable-Baselines3:

1. **Collect.** ``num_games`` games advance in lockstep for ``horizon`` steps.  In a self-play game
   both seats are the learner, so every decision of either seat is a training *frame*; in the
   ``pool_share`` of games played against the pool (``pool``: bot specs and ``past``, a snapshot of
   the learner kept every ``snapshot_every`` frames) only the learner's seat makes frames.  A
   forced move (one legal action) is played without the network and leaves no row; the others are
   drawn from the policy and kept in preallocated arrays (:class:`conquian_train.rollout.SeatRollout`),
   linked to their seat's next decision.  The network (``hidden`` ReLU layers over ``observation``)
   has, with ``head`` ``"cards"`` (the default), a card head: each hand card scored by a small network
   shared by the cards (:mod:`agents.networks.card_head`), which reaches in 1M frames what the plain
   MLP reaches in 5M.
2. **Learn.** ``epochs`` passes of PPO over each rollout's rows in minibatches of ``minibatch``
   (:class:`conquian_train.learner.Learner`): advantages by GAE along each seat's own decisions, a
   value head that also sees the hidden cards (``critic_sees_all``; the policy never does), the
   entropy over the legal actions as a bonus.
3. **Evaluate** every ``eval_every`` frames: the most likely legal action against each of
   ``eval_opponents`` on the duplicate deals of ``conquian-evaluate --seed eval_seed``, and against
   the learner's oldest kept snapshot (how far self-play moved): ``eval.csv``, ``learning_curve.png``,
   ``best.npz`` (best against ``best_by``).  ``train.csv`` holds the update statistics and the speed.

The run folder (``out``): ``config.json``, ``train.log``, ``train.csv``, ``eval.csv``,
``learning_curve.png``, ``checkpoints/`` (``latest.npz``: weights and optimizer, ``snapshots.npz``,
``state.json``), ``best.npz``, ``final.npz``, ``run.lock``.  Play a result with
``conquian-evaluate selfplay:runs/NAME/best.npz greedy``.

A checkpoint is taken every ``checkpoint_every`` frames and begins a *segment*: the games in progress
are dropped, every game is dealt anew and every random number starts again from
``derive_seed(seed, SELFPLAY_SEGMENT, frames)``, so a resumed run makes the very frames, updates,
evaluations and files of the run that was never stopped.

Speed: the network, not the engine, is the cost on a CPU; ``precision`` ``auto`` takes bfloat16 where
the CPU computes it natively (AMX, AVX-512 BF16) and float32 elsewhere; ``torch_threads`` threads
(2 uses both cores of a two-core machine for the matrix products, with ``OMP_WAIT_POLICY=PASSIVE``
set before torch starts, as this command does); the engine's kernels use the same cores between
the network's passes.  ``device cuda`` moves the network and the update to a GPU, the engine
stays on the host's cores.  docs/benchmarks.md has the measured rates.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.batched import make_batch_opponent
from agents.networks.batched import BatchPolicy
from agents.networks.card_head import HEADS, CardHead, card_planes
from agents.networks.ppo import NumpyPolicy, PolicyAgent
from agents.networks.selfplay import save_selfplay
from conquian_arena import knobs
from conquian_arena.knobs import knob
from conquian_env.model_layouts import feature_set
from conquian_env.seeding import derive_seed

from ..evaluation import Evaluator
from ..pool import parse_pool
from ..run import PPO_START, RunFolder, RunFolderError, plot_learning_curve
from ..seeding import SELFPLAY_SEGMENT
from ..settings import RunSettings, recipe_knobs
from . import Recipe, parser, run_recipe


@dataclass
class SelfPlayConfig(RunSettings):
    """Every knob of a self-play run (the module docstring tells the recipe)."""

    total_frames: int = knob(50_000_000, "decisions of learning seats in total (forced ones included)", low=1)
    eval_every: int = knob(10_000_000, "frames between evaluations (0: only at the start and the end)", low=0)
    checkpoint_every: int = knob(20_000_000, "frames between checkpoints (each starts a segment)", low=1)
    eval_games: int = knob(2000, "games per evaluation opponent (duplicate deals, seats swapped)", low=2)
    num_games: int = knob(4096, "games played at once", low=2)
    horizon: int = knob(32, "steps of every game per rollout (one update per rollout)", low=1)
    observation: str = knob("potential", "what the network reads: 'potential' (the observation and its meld-potential "
                            "planes, conquian_env.potential) or 'raw' (the observation alone)",
                            choices=("potential", "raw"))  # fmt: skip
    hidden: tuple[int, ...] = knob((128, 128), "widths of the network's hidden ReLU layers")
    head: str = knob("cards", "'cards' (a card head: each hand card scored by a small network shared by the cards, "
                     "agents.networks.card_head) or 'mlp' (the last hidden layer alone gives the logits)",
                     choices=HEADS)  # fmt: skip
    critic_sees_all: bool = knob(True, "the value head also reads the hidden cards (the policy never does)")
    lr: float = knob(2e-3, "Adam's learning rate", above=0)
    minibatch: int = knob(2048, "rows per gradient step", low=2)
    epochs: int = knob(1, "passes of the update over each rollout's rows", low=1)
    clip: float = knob(0.2, "PPO's ratio clip", above=0)
    ent_coef: float = knob(0.01, "weight of the policy's entropy over the legal actions", low=0)
    vf_coef: float = knob(0.5, "weight of the value loss", low=0)
    max_grad_norm: float = knob(0.5, "gradients clipped to this norm", above=0)
    gamma: float = knob(0.995, "discount per own decision", above=0)
    gae_lambda: float = knob(0.95, "GAE's lambda", low=0)
    pool_share: float = knob(0.25, "share of the games played against the pool (0: pure self-play)", low=0)
    pool: tuple[str, ...] = knob(("greedy@1", "past@1"), "the pool, SPEC@WEIGHT: bot specs and 'past' (a snapshot)",
                                 spec=True)  # fmt: skip
    snapshot_every: int = knob(10_000_000, "frames between the learner's snapshots kept for the pool", low=1)
    max_snapshots: int = knob(8, "snapshots kept (the oldest goes first)", low=1)
    precision: str = knob("auto", "'auto' (bfloat16 where the CPU has it), 'bf16' or 'float32'",
                          choices=("auto", "bf16", "float32"))  # fmt: skip
    device: str = knob("cpu", "torch device of the network and the update ('cpu', 'cuda')", choices=("cpu", "cuda"))
    torch_threads: int = knob(2, "threads of the matrix products (with overlap: shared by the update and the rollout)",
                              low=1)  # fmt: skip
    overlap: bool = knob(True, "collect the next rollout while the update runs (two threads; the policy lags one "
                               "update, as PPO's ratio allows)")  # fmt: skip
    progress: bool | None = knob(None, "progress bar on standard error (default: when it is a terminal)")

    def validate(self) -> None:
        knobs.check(self)
        self.validate_run()
        if not 0 <= self.pool_share < 1:
            raise ValueError(f"pool_share must be at least 0 and below 1, got {self.pool_share}")
        if not 1 <= len(self.hidden) <= 7 or any(w < 1 or w > 4096 for w in self.hidden):
            raise ValueError(f"hidden must list 1 to 7 widths from 1 to 4096, got {list(self.hidden)}")
        if not 0 < self.gamma <= 1 or not 0 <= self.gae_lambda <= 1:
            raise ValueError(f"gamma must be in (0, 1] and gae_lambda in [0, 1], got {self.gamma}, {self.gae_lambda}")
        if self.pool_share:
            parse_pool(self.pool)
        if device_missing(self.device):
            raise ValueError(f"device {self.device!r}: torch sees no CUDA device here; use --device cpu")
        if self.eval_games % 2:
            raise ValueError(f"eval_games must be even (each deal is played twice), got {self.eval_games}")


#: where a rollout's time goes (``train.csv``'s ``us_*`` columns, microseconds per frame): the engine's step and
#: observation, filling the rows (and the hidden planes), the network's forward pass and sampling, the pool's
#: moves, the update
CLOCK = ("engine", "rows", "forward", "pool", "update")

MAY_CHANGE = ("total_frames", "progress", "workers", "torch_threads", "eval_every")


def recipe(config: SelfPlayConfig) -> dict[str, Any]:
    """The knobs that make the run what it is (a checkpoint refuses a ``config.json`` that changed them)."""
    return recipe_knobs(config, ("out", *MAY_CHANGE))


#: the recipe's keys of ``checkpoints/state.json`` (beside :data:`conquian_train.run.COMMON_STATE`)
SELFPLAY_STATE = {"next_eval": "count", "next_snapshot": "count", "next_checkpoint": "count",
                  "snapshot_steps": "list of counts"}  # fmt: skip


def duplicate_score(a: Any, b: Any, games: int, seed: int, rules: Any) -> dict[str, Any]:
    """Two batched bots on ``games // 2`` deals from ``seed``, each deal played twice with the seats
    swapped: A's W/D/L and score with its 95% interval over deals (:func:`conquian_arena.pair.pair_score`)."""
    from conquian_arena.batch import play_batch
    from conquian_arena.pair import pair_score

    deals = np.random.default_rng(seed).permuted(np.tile(np.arange(40), (games // 2, 1)), axis=1)
    seats = np.tile([0, 1], games // 2)
    scores, _ = play_batch(a, b, np.repeat(deals, 2, axis=0), seats, rules=rules)
    return pair_score([{"deal": k // 2, "score": float(v)} for k, v in enumerate(scores)])


def device_missing(device: str) -> bool:
    """Whether ``device`` is a GPU torch cannot use here."""
    import torch

    return device == "cuda" and not torch.cuda.is_available()


class SelfPlayModel:
    """The learner's policy in the shape :class:`~conquian_train.evaluation.Evaluator` takes."""

    suffix = ".npz"

    def __init__(self, network: NumpyPolicy, meta: dict[str, Any]):
        self.network, self.meta = network, meta  # not ``policy``: the evaluator reads that as an SB3 model's

    def agent(self) -> PolicyAgent:
        return PolicyAgent(self.network, deterministic=True)

    def batch_agent(self) -> BatchPolicy:
        return BatchPolicy(self.network, deterministic=True)

    def save(self, path: str | Path) -> None:
        save_selfplay(path, [(w, b) for w, b, _ in self.network.layers], self.meta, features=self.network.features,
                      head=self.network.head)  # fmt: skip


def time_left(frames: int, rate: float) -> str:
    """The progress line's end: about how long ``frames`` more take at ``rate`` frames/s ("" when none are
    left: the last rollout may pass the total)."""
    if frames <= 0:
        return ""
    seconds = frames / max(rate, 1)
    return f"; about {seconds:.0f} s to go" if seconds < 90 else f"; about {seconds / 60:.0f} min to go"


class SelfPlayRun:
    """One self-play run in its folder (see the module docstring)."""

    def __init__(self, config: SelfPlayConfig, resume: bool = False):
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its threads
        import torch

        from conquian_env.vector import VectorGame

        from ..learner import Learner, UpdateSettings, cpu_has_bf16, numpy_blas_threads
        from ..rollout import SeatRollout

        c = self.config = config
        numpy_blas_threads(1)  # the pool's and the evaluation's numpy passes: small, beside torch's threads
        # with overlap the update and the rollout run side by side, each on its share of the threads
        torch.set_num_threads(max(1, c.torch_threads // 2) if c.overlap else c.torch_threads)
        self.run = RunFolder(c.out, recipe(c), start=PPO_START)
        bf16 = c.precision == "bf16" or (c.precision == "auto" and c.device == "cpu" and cpu_has_bf16())
        settings = UpdateSettings(c.minibatch, c.epochs, c.lr, c.clip, c.ent_coef, c.vf_coef, c.max_grad_norm, c.gamma,
                                  c.gae_lambda)  # fmt: skip
        inputs = feature_set(c.observation).size
        self.learner = Learner(c.hidden, c.critic_sees_all, settings, bf16=bf16, seed=c.seed, device=c.device,
                               acting_copy=c.overlap, inputs=inputs, head=c.head, features=c.observation)  # fmt: skip
        self.games = VectorGame(c.num_games, seed=0, rules=c.rules, first="alternate",
                                parallel=c.torch_threads > 1 and not c.overlap)  # fmt: skip
        # two rollouts: one is learned from while the next is collected into the other
        self.rollouts = [SeatRollout(c.num_games, c.num_games * c.horizon, hidden=c.critic_sees_all,
                                     pinned=c.device == "cuda", inputs=inputs) for _ in range(2)]  # fmt: skip
        self.data = self.rollouts[0]
        self.pooled = int(round(c.num_games * c.pool_share))
        self.pool = parse_pool(c.pool) if self.pooled else []
        self.bots = {spec: make_batch_opponent(spec, derive_seed(c.seed, SELFPLAY_SEGMENT, i))
                     for i, (spec, _) in enumerate(self.pool) if spec != "past"}  # fmt: skip
        self.snapshots: list[NumpyPolicy] = []
        self.writer: Any = None  # TensorBoard's, made at the first row
        self.run.state.update(next_eval=0, next_snapshot=0, next_checkpoint=c.checkpoint_every, snapshot_steps=[])
        self.evaluate = Evaluator(self.run, c.eval_opponents, c.best_by, games=c.eval_games, seed=c.eval_seed,
                                  rules=c.rules, jobs=c.processes, xlabel="frames")  # fmt: skip
        self.precision = "bfloat16" if bf16 else "float32"
        state = self.run.open_checkpoint(SELFPLAY_STATE)
        if state is not None and not resume:
            raise RunFolderError(f"{c.out} already holds a run: use --resume {c.out} or another --out")
        if state is not None:
            self.learner.load(self.run.checkpoints / "latest.npz")
            from ..policy_files import load_snapshots

            self.snapshots = load_snapshots(self.run.checkpoints / "snapshots.npz", c.observation)
            self.run.log(f"resumed {self.run.out} at frame {self.frames:,}")
        elif resume:
            self.run.log(f"{self.run.out} holds no checkpoint yet: the run starts from its beginning")

    @property
    def frames(self) -> int:
        return int(self.run.state.get("num_timesteps", 0))

    # ------------------------------------------------------------------ pieces
    def model(self) -> SelfPlayModel:
        layers = self.learner.net.actor_layers()
        named = [(w, b, "ReLU" if i < len(layers) - 1 else "Identity") for i, (w, b) in enumerate(layers)]
        meta = {"frames": self.frames, "seed": self.config.seed}
        arrays, features = self.learner.net.head_arrays(), self.config.observation
        head = None if arrays is None else CardHead(arrays, features, card_planes(features), layers[-1][0].shape[1])
        return SelfPlayModel(NumpyPolicy(named, features, head=head), meta)

    def start_segment(self) -> None:
        """New deals everywhere and every random number from the frame count (see the module docstring)."""
        s = derive_seed(self.config.seed, SELFPLAY_SEGMENT, self.frames)
        self.games.reset(seed=s)
        self.learner.reseed(s)
        self.rng, self.update_rng = (np.random.default_rng(x) for x in np.random.SeedSequence(s).spawn(2))
        for data in self.rollouts:
            data.reset()
        self.data = self.rollouts[0]
        for i, bot in enumerate(self.bots.values()):
            if hasattr(bot, "reseed"):
                bot.reseed(derive_seed(s, i))
        if not hasattr(self, "clock"):
            self.clock = dict.fromkeys(CLOCK, 0.0)
        self.members = np.zeros(self.config.num_games, dtype=np.int64)
        self.seat_snapshots()
        self.draw_members(np.arange(self.pooled))

    def seat_snapshots(self) -> None:
        """The kept snapshots as the pool's batched players, sampling their moves, each with random
        numbers of its own from the frame count (at a segment's start and when a snapshot is kept)."""
        s = derive_seed(self.config.seed, SELFPLAY_SEGMENT, self.frames)
        self.past_bots = [BatchPolicy(p, deterministic=False, seed=derive_seed(s, 100 + i))
                          for i, p in enumerate(self.snapshots)]  # fmt: skip

    def draw_members(self, rows: np.ndarray) -> None:
        """A pool member for each pooled game in ``rows`` (new deals): the index of its entry in ``pool``, or
        ``len(pool) + k`` for the kept snapshot ``k`` (:meth:`member_bot`)."""
        if not len(rows):
            return
        weights = np.array([w if spec != "past" or self.snapshots else 0.0 for spec, w in self.pool])
        if weights.sum() <= 0:
            weights = np.array([1.0 if spec != "past" else 0.0 for spec, _ in self.pool])
        self.members[rows] = self.rng.choice(len(self.pool), size=len(rows), p=weights / weights.sum())
        past = np.array([spec == "past" for spec, _ in self.pool])[self.members[rows]]
        if past.any() and self.snapshots:  # which snapshot: encoded past the pool's entries
            self.members[rows[past]] = len(self.pool) + self.rng.integers(len(self.snapshots), size=int(past.sum()))

    def member_bot(self, index: int) -> Any:
        if index >= len(self.pool):
            return self.past_bots[index - len(self.pool)]
        return self.bots[self.pool[index][0]]

    def chooser(self, game: int, learner_turn: np.ndarray) -> str:
        """Who chose the move in ``game`` this step: the learner or which member of the pool."""
        index = int(self.members[game])
        if learner_turn[game]:
            return "the learner"
        return f"the pool's {self.pool[index][0] if index < len(self.pool) else f'snapshot {index - len(self.pool)}'}"

    # ------------------------------------------------------------------ the loop
    def collect(self, data: Any = None) -> int:
        """One rollout into ``data`` (default: the current one): ``horizon`` steps of every game; returns
        the learning seats' decisions (frames)."""
        from conquian_env import kernels as K
        from conquian_env.game import IllegalActionError
        from conquian_env.potential import potential_rows

        from ..rollout import hidden_planes

        c, g, learner, clock = self.config, self.games, self.learner, self.clock
        data = self.data if data is None else data
        state, pooled = g.state, self.pooled
        planes = c.observation == "potential"
        pool_seat = np.arange(pooled) % 2  # the pool's seat in pooled game i (the learner the other)
        frames = 0
        tick = time.perf_counter
        for _ in range(c.horizon):
            t0 = tick()
            obs, mask = g.observations, g.masks
            players = state[:, K.PLAYER]
            actions = np.argmax(mask, axis=1)  # forced moves: the one legal action
            learner_turn = np.ones(c.num_games, dtype=bool)
            if pooled:
                learner_turn[:pooled] = players[:pooled] != pool_seat
            choice = learner_turn & (mask.sum(axis=1, dtype=np.int16) > 1)
            rows = np.flatnonzero(choice)
            if len(rows):
                sl = data.add(rows, players[rows])
                data.obs[sl, : obs.shape[1]] = obs[rows]
                if planes:  # the meld-potential planes after the observation
                    potential_rows(state, rows, players[rows], data.obs[sl])
                data.mask[sl] = mask[rows]
                if data.hidden is not None:
                    hidden_planes(state, rows, players[rows], data.hidden[sl])
                t1 = tick()
                learner.sample(data, sl)
                actions[rows] = data.action[sl]
                clock["rows"] += t1 - t0
                t0 = tick()
                clock["forward"] += t0 - t1
            if pooled:
                theirs = np.flatnonzero(~learner_turn[:pooled] & (mask[:pooled].sum(axis=1, dtype=np.int16) > 1))
                for m in np.unique(self.members[theirs]):
                    picked = theirs[self.members[theirs] == m]
                    actions[picked] = self.member_bot(int(m)).act_batch(g, picked)
            frames += int(learner_turn.sum())
            t1 = tick()
            clock["pool"] += t1 - t0
            try:  # the engine refuses an illegal move before it changes anything, naming it and the legal ones
                res = g.step(actions)
            except IllegalActionError as err:  # a bug of the loop or a bot, never the user's
                bad = int(np.flatnonzero(mask[np.arange(len(actions)), actions] == 0)[0])
                raise AssertionError(f"{err}; chosen by {self.chooser(bad, learner_turn)}, state "
                                     f"{state[bad].tolist()}") from err  # fmt: skip
            done = np.flatnonzero(res.dones)
            data.end(done, res.rewards)
            if pooled:
                self.draw_members(done[done < pooled])
            clock["engine"] += tick() - t1
        return frames

    def iterate(self, ahead: int | None) -> tuple[int, dict[str, float], int, int | None]:
        """One rollout and one update: the rollout collected now (or, ``ahead``, its frames when it was
        collected during the last update), the frame count moved on, the pending rows carried to the
        other rollout, then the update, with the next rollout collected meanwhile (``overlap``) unless
        a checkpoint follows.  Returns the rollout's frames, the update's statistics, the rollout's
        rows and the frames collected ahead (None: nothing)."""
        c, run, data = self.config, self.run, self.data
        frames = self.collect(data) if ahead is None else ahead
        run.state["num_timesteps"] = self.frames + frames
        nxt = self.rollouts[1] if data is self.rollouts[0] else self.rollouts[0]
        rows = data.count
        data.carry(into=nxt)
        boundary = self.frames >= run.state["next_checkpoint"] or self.frames >= c.total_frames
        if c.overlap and not boundary:
            stats, ahead = self.learn_while_collecting(data, nxt)
        else:  # a checkpoint follows (or no overlap): nothing is collected ahead of it
            stats, ahead = self.learn(data), None
        self.learner.sync()
        self.data = nxt
        return frames, stats, rows, ahead

    def learn(self, data: Any) -> dict[str, float]:
        t0 = time.perf_counter()
        stats = self.learner.update(data, self.update_rng)
        self.clock["update"] += time.perf_counter() - t0
        return stats

    def learn_while_collecting(self, data: Any, into: Any) -> tuple[dict[str, float], int]:
        """The update on ``data`` in a thread of its own while the next rollout is collected into
        ``into`` with the weights from before it (the acting copy); the update's statistics and the
        frames collected."""
        import threading

        out: dict[str, Any] = {}

        def update() -> None:
            try:
                out["stats"] = self.learner.update(data, self.update_rng)
            except BaseException as err:  # raised again in the main thread
                out["error"] = err

        t0 = time.perf_counter()
        worker = threading.Thread(target=update, name="selfplay-update")
        worker.start()
        frames = self.collect(into)
        t1 = time.perf_counter()
        worker.join()
        self.clock["update"] += time.perf_counter() - t1  # the update's time beyond the rollout's
        del t0
        if "error" in out:
            raise out["error"]
        return out["stats"], frames

    def snapshot(self) -> None:
        c, run = self.config, self.run
        self.snapshots.append(self.model().network)
        run.state["snapshot_steps"] = (run.state["snapshot_steps"] + [self.frames])[-c.max_snapshots :]
        self.snapshots = self.snapshots[-c.max_snapshots :]
        run.state["next_snapshot"] = self.frames + c.snapshot_every
        self.seat_snapshots()

    def eval_now(self) -> None:
        """Every evaluation opponent, then the oldest kept snapshot (how far self-play moved)."""
        c, run = self.config, self.run
        model = self.model()
        for r in self.evaluate(model, self.frames, stage="selfplay"):
            self.board({k: v for k, v in r.items() if k in ("opponent", "score", "low", "high", "decided_won")})
        if self.snapshots and run.state["snapshot_steps"]:
            oldest = run.state["snapshot_steps"][0]
            r = duplicate_score(model.batch_agent(), BatchPolicy(self.snapshots[0]), c.eval_games, c.eval_seed, c.rules)
            run.log(f"eval @ {self.frames:,}: vs its snapshot of frame {oldest:,}: score {r['score']:.3f} "
                    f"[{r['low']:.3f}, {r['high']:.3f}]")  # fmt: skip
            self.board({"opponent": "oldest snapshot", "score": r["score"]})
            run.append_csv(
                "eval.csv",
                [
                    {
                        "stage": "selfplay",
                        "step": self.frames,
                        "seconds": round(run.elapsed(), 1),
                        "opponent": "oldest snapshot",
                        **{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()},
                    }
                ],
            )
            plot_learning_curve(run.out / "eval.csv", run.out / "learning_curve.png", xlabel="frames")
        run.state["last_eval_step"] = self.frames
        run.state["next_eval"] = self.frames + c.eval_every if c.eval_every else c.total_frames

    def board(self, row: dict[str, Any]) -> None:
        """The row's numbers in TensorBoard (``tb/``; beside the CSV tables, which are the record)."""
        if self.writer is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard (the train extra) is not installed: the CSV tables stay
                self.writer = False
                return
            self.writer = SummaryWriter(str(self.run.out / "tb"))
        if self.writer:
            for k, v in row.items():
                if k not in ("frames", "opponent", "stage") and isinstance(v, (int, float)):
                    self.writer.add_scalar(f"{row.get('opponent', 'train')}/{k}", v, self.frames)
            self.writer.flush()

    def checkpoint(self) -> None:
        from ..policy_files import save_snapshots

        self.run.state["next_checkpoint"] = self.frames + self.config.checkpoint_every
        self.run.save_checkpoint_files(
            {"latest.npz": self.learner.save, "snapshots.npz": lambda p: save_snapshots(p, self.snapshots)},
            self.frames,
        )

    def train(self) -> dict[str, Any]:
        c, run = self.config, self.run
        run.log(f"self-play: {c.num_games} games x {c.horizon} steps a rollout, network {list(c.hidden)} in "
                f"{self.precision} on {c.device}, {c.torch_threads} torch threads; "
                f"{c.total_frames:,} frames")  # fmt: skip
        self.start_segment()
        if run.state.get("last_eval_step") is None:
            self.eval_now()
            self.checkpoint()
        bar = None
        if c.progress if c.progress is not None else sys.stderr.isatty():
            from tqdm import tqdm

            bar = tqdm(total=c.total_frames, initial=self.frames, unit="frame", unit_scale=True, file=sys.stderr)
        wall, cpu, window = time.perf_counter(), time.process_time(), 0
        self.clock = dict.fromkeys(CLOCK, 0.0)
        ahead: int | None = None  # the frames of a rollout collected during the last update
        try:
            while self.frames < c.total_frames:
                frames, stats, rows, ahead = self.iterate(ahead)
                boundary = self.frames >= run.state["next_checkpoint"] or self.frames >= c.total_frames
                window += frames
                if bar is not None:
                    bar.update(frames)
                if window >= 2_000_000 or self.frames >= c.total_frames:
                    now, now_cpu = time.perf_counter(), time.process_time()
                    row = {"frames": self.frames, "seconds": round(run.elapsed(), 1),
                           "frames_per_s": round(window / (now - wall)),
                           "frames_per_cpu_s": round(window / max(now_cpu - cpu, 1e-9)),
                           "network_rows": rows, **{k: round(v, 5) for k, v in stats.items()},
                           **{f"us_{k}": round(v / window * 1e6, 3) for k, v in self.clock.items()}}  # fmt: skip
                    self.clock = dict.fromkeys(CLOCK, 0.0)
                    run.append_csv("train.csv", [row])
                    self.board(row)
                    if bar is not None:
                        bar.set_postfix(fps=f"{row['frames_per_s']:,}", ent=f"{stats['entropy']:.2f}")
                    else:
                        run.log(f"frame {self.frames:,}: {row['frames_per_s']:,} frames/s "
                                f"({row['frames_per_cpu_s']:,} per CPU-s), entropy {stats['entropy']:.3f}, "
                                f"value loss {stats['value_loss']:.4f}"
                                f"{time_left(c.total_frames - self.frames, row['frames_per_s'])}")  # fmt: skip
                    wall, cpu, window = now, now_cpu, 0
                if self.frames >= run.state["next_snapshot"]:
                    self.snapshot()
                if self.frames >= run.state["next_eval"] or self.frames >= c.total_frames:
                    self.eval_now()
                if boundary:
                    self.checkpoint()
                    self.start_segment()
        except KeyboardInterrupt:
            run.log(f"interrupted at frame {self.frames:,}: continue with --resume {run.out} (from the last "
                    "checkpoint)")  # fmt: skip
            raise
        finally:
            if bar is not None:
                bar.close()
        run.save_model(self.model(), "final.npz")
        run.log(f"done: {self.frames:,} frames in {run.elapsed():.0f} s; best score vs {c.best_by} "
                f"{run.state['best_score']:.3f} at frame {run.state['best_step']:,} -> "
                f"{run.out / 'best.npz'}")  # fmt: skip
        return run.state


def holds_run(out: Path) -> bool:
    """A self-play run is in ``out`` once it has a checkpoint."""
    return (out / "checkpoints").exists() or (out / "checkpoints.ready").exists()


def main(argv: list[str] | None = None, prog: str = "conquian-train selfplay") -> int:
    """``conquian-train selfplay``: a new run (``--out``) or ``--resume RUN``."""
    made = parser(prog, __doc__, SelfPlayConfig, formatter_class=argparse.RawDescriptionHelpFormatter)
    args = vars(made.parse_args(sys.argv[1:] if argv is None else argv))
    return run_recipe(SelfPlayConfig, args, MAY_CHANGE,
                      lambda config, resume: SelfPlayRun(config, resume=resume).train(),
                      holds_run=holds_run, prog=prog)  # fmt: skip


def quick(root: Path, workers: int) -> list[tuple[Path, list[str], list[str]]]:
    """The recipe at a tiny size (:data:`conquian_train.recipes.QuickRun`)."""
    out = root / "run"
    start = ["--out", str(out), "--total-frames", "1200", "--num-games", "16", "--horizon", "16", "--hidden", "8",
             "--minibatch", "32", "--eval-every", "600", "--checkpoint-every", "600", "--snapshot-every", "300",
             "--eval-games", "4", "--workers", str(workers), "--no-progress"]  # fmt: skip
    return [(out, start, ["--resume", str(out), "--no-progress"])]


RECIPE = Recipe("selfplay", "RL from scratch: both seats learn, PPO over the batched engine",
                (SelfPlayConfig,), main, quick)  # fmt: skip
