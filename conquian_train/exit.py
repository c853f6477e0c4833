"""Expert iteration on the compiled search: the search labels, the network learns, the network plays on.

::

    python train.py exit --out runs/exit              # the shipped recipe (resumes: run it again)
    python train.py exit --resume runs/exit --rounds 8
    python train.py exit --help                       # every knob

Each **round** ``r``:

1. **Play.** The student plays ``games`` games against the ``opponents`` (seats alternate;
   deals from ``derive_seed(seed, 23, r, game)``).  Round 0's student is ``greedy``; later
   rounds' student is the network of the round before, playing its most likely action.
2. **Label.** Every decision of the student with a choice is kept as the policy sees it
   (``features``) with a snapshot of the player's view.  Outside the meld phase the compiled
   search (:func:`agents.search.analyze`, at most ``playouts`` playouts per position, the
   actions racing as in the ``ismcts`` bot at ``z``) gives the value of every legal action; in
   the meld phase the label is greedy's meld plan (the search melds by it too).  Every ``chunk`` games the labels go
   to a shard ``labels/r{r}_{k}.npz`` (an :class:`agents.imitation.ImitationData`, read
   without pickles).  A shard on disk is never made again: a killed run resumes at the
   first missing one, with the same student, so it makes the same games.
3. **Learn.** The network (an SB3 ``MaskablePPO`` policy, so ``ppo:PATH`` plays it; its first
   weights from ``init``, by default the shipped ``ppo`` model, greedy's clone) is fitted
   on every shard of every round so far (:func:`agents.imitation.fit_imitation`: the
   ``advantage`` loss, logits regressing the search's values, least squares averaging their
   noise; the value head the results), ``epochs`` passes, continuing from the last round.
4. **Evaluate** against ``eval_opponents`` on ``conquian-evaluate``'s duplicate deals at
   ``eval_seed``: ``eval.csv`` (its ``step`` is the labelled decisions so far),
   ``learning_curve.png``, ``best.zip`` (best against ``best_by``).

The run folder: ``config.json``, ``train.log``, ``labels/``, ``rounds.csv`` (where the time
went: play, label, fit, evaluate), ``eval.csv``, ``bc.csv`` (the fit's epochs),
``checkpoints/latest.zip`` and ``state.json``, ``round{r}.zip``, ``best.zip``, ``final.zip``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, PlayerView
from agents.greedy import GreedyAgent
from agents.imitation import ImitationData, ImitationSettings, fit_imitation
from agents.ppo import DEFAULT_MODEL, NumpyPolicy, PolicyAgent, read_model, restore_checkpoint
from agents.registry import make_agent
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.game import MELD
from conquian_env.seeding import derive_seed

from . import knobs
from .envs import make_vec_env
from .evaluation import Evaluator
from .knobs import knob
from .run import RunFolder


@dataclass
class ExItConfig:
    """Every knob of an expert-iteration run (see the module docstring for the recipe)."""

    out: str = knob("runs/exit", "run folder (config, labels, logs, checkpoints, models)")
    seed: int = knob(0, "seed of everything in the run (deals, searches, network init)")
    rounds: int = knob(4, "rounds of play, label, learn, evaluate")
    games: int = knob(2000, "games the student plays per round")
    chunk: int = knob(100, "games per label shard (the unit a killed run redoes)")
    playouts: int = knob(3000, "playouts of the search per labelled position at most")
    z: float = knob(3.0, "the search's race: an action this many standard errors behind stops (0: no race)")
    opponents: tuple[str, ...] = knob(("greedy",), "bot specs the student plays while its positions are labelled")
    features: str = knob(
        "meld", "network input: 'meld' (raw observation + meld features, greedy's choice among them) or 'raw'"
    )
    net_arch: tuple[int, ...] = knob((256, 256), "hidden layer sizes of the policy and value networks")
    init: str = knob("ppo", "weights that start the network: 'ppo' (the shipped model), a model .zip, '' (random)")
    epochs: int = knob(3, "passes over all labels so far, per round (the one with the lowest held-out regret kept)")
    lr: float = knob(1e-3, "learning rate (Adam)")
    temperature: float = knob(0.02, "scale of the logits against the search's values (advantage loss)")
    loss: str = knob(
        "advantage", "'advantage' (logits regress the values) or 'softmax' (cross-entropy on softmax(q / T))"
    )
    greedy_bonus: float = knob(0.0, "added to the value of greedy's choice in the targets (leave greedy only for more)")
    value_coef: float = knob(0.5, "weight of the value head's loss")
    eval_games: int = knob(2000, "games per evaluation opponent (duplicate deals, seats swapped)")
    eval_opponents: tuple[str, ...] = knob(("random", "greedy"), "bot specs evaluated against")
    eval_seed: int = knob(1_000_003, "deal seed of the evaluations (never used to label)")
    best_by: str = knob("greedy", "evaluation opponent whose score picks best.zip")
    forcing: bool = knob(False, "play the forcing variant (RULES.md section 7)")
    torch_threads: int = knob(1, "torch threads")
    workers: int = knob(1, "processes for the evaluations")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the knob that is wrong (before any work starts)."""
        for name in ("rounds", "games", "chunk", "playouts", "epochs", "eval_games", "torch_threads", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.features not in ("meld", "raw"):
            raise ValueError(f"features must be 'meld' or 'raw', got {self.features!r}")
        if not (isinstance(self.z, (int, float)) and self.z >= 0):
            raise ValueError(f"z must be a number >= 0, got {self.z!r}")
        if not self.net_arch or any(int(n) < 1 for n in self.net_arch):
            raise ValueError(f"net_arch must be positive layer sizes, got {self.net_arch!r}")
        if self.best_by not in self.eval_opponents:
            raise ValueError(f"best_by {self.best_by!r} must be one of eval_opponents {list(self.eval_opponents)}")
        if not self.opponents:
            raise ValueError("opponents is empty")
        self.imitation()
        if self.init and self.init != "ppo" and not Path(self.init).is_file():
            raise ValueError(f"init {self.init!r} is neither 'ppo', '' nor a model file")
        for spec in (*self.opponents, *self.eval_opponents):
            make_agent(spec, 0)  # a bad spec fails now, not after an hour

    def imitation(self) -> ImitationSettings:
        """The fit's settings (no label smoothing: the targets are the search's values)."""
        return ImitationSettings(
            epochs=self.epochs, lr=self.lr, smoothing=0.0, temperature=self.temperature, loss=self.loss,
            greedy_bonus=self.greedy_bonus, value_coef=self.value_coef, best_epoch=True,
        )  # fmt: skip


# --------------------------------------------------------------------------- play and label


class ViewRecorder(Agent):
    """Plays ``student``'s moves and keeps each decision with a choice: the policy's input,
    the mask, a snapshot of the view, and greedy's move where the phase is the meld."""

    def __init__(self, student: Agent, features: str):
        from agents.features import FeatureEncoder

        self.student, self.name = student, student.name
        self.encoder = FeatureEncoder() if features == "meld" else None
        self.melder = GreedyAgent()
        self.rows: list[tuple[np.ndarray, np.ndarray, PlayerView, int]] = []

    def reset(self, player: int, seed: int | None = None) -> None:
        self.rows = []
        if self.encoder is not None:
            self.encoder.reset()
        self.melder.reset(player, seed)
        self.student.reset(player, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray, view: PlayerView) -> int:
        obs = observation if self.encoder is None else self.encoder.encode(view)
        legal = view.legal_action_mask()
        if legal & (legal - 1):  # a choice: one legal action teaches nothing
            meld_label = self.melder.choose(view) if view.phase == MELD else -1
            self.rows.append((obs, np.asarray(action_mask, dtype=bool), view.snapshot(), meld_label))
        return self.student.act(observation, action_mask, view)


def play_and_label(student: Agent, config: ExItConfig, round_: int, chunk: int) -> tuple[ImitationData, dict]:
    """Games ``chunk * config.chunk ..`` of round ``round_``, their decisions labelled; and timings."""
    from agents.search import analyze

    c, t0 = config, time.perf_counter()
    recorder = ViewRecorder(student, c.features)
    opponents = {spec: make_agent(spec, c.seed + 1) for spec in c.opponents}
    rows, results = [], {"wins": 0, "draws": 0, "losses": 0}
    first = chunk * c.chunk
    for g in range(first, min(first + c.chunk, c.games)):
        spec, seat = c.opponents[g % len(c.opponents)], (g // len(c.opponents)) % 2
        game_seed = derive_seed(c.seed, 23, round_, g)
        hands, stock = deal_for_seed(game_seed)
        players = [recorder, opponents[spec]] if seat == 0 else [opponents[spec], recorder]
        record = play_game(players, hands=hands, stock=stock, seed=game_seed, forcing=c.forcing)
        if record.failure is not None:
            raise RuntimeError(f"round {round_} game {g} failed: {record.failure}")
        result = 0.0 if record.winner is None else (1.0 if record.winner == seat else -1.0)
        results["wins" if result > 0 else "draws" if result == 0 else "losses"] += 1
        rows += [
            (obs, mask, view, label, result, round_ * 1_000_000_000 + g) for obs, mask, view, label in recorder.rows
        ]
    t_play = time.perf_counter() - t0
    searched = [i for i, r in enumerate(rows) if r[3] < 0]
    values = np.full((len(rows), len(rows[0][1]) if rows else 0), np.nan, np.float32)
    actions = np.array([r[3] for r in rows], np.int64)
    if searched:
        v, _, chosen = analyze([rows[i][2] for i in searched], iterations=c.playouts, z=c.z,
                               seed=derive_seed(c.seed, 29, round_, chunk))  # fmt: skip
        values[searched] = v
        actions[searched] = chosen
    t_label = time.perf_counter() - t0 - t_play
    decisions = [(r[0], r[1], int(a), r[4], None if r[3] >= 0 else q, r[5])
                 for r, a, q in zip(rows, actions, values, strict=True)]  # fmt: skip
    data = ImitationData.from_decisions(decisions, c.features)
    timing = {"play_s": t_play, "label_s": t_label, "searched": len(searched), "meld_labels": len(rows) - len(searched),
              **results}  # fmt: skip
    return data, timing


# --------------------------------------------------------------------------- the loop


class ExItRun:
    """One expert-iteration run in its folder: shards, model, state; :meth:`run` does the rounds left."""

    def __init__(self, config: ExItConfig, resume: bool = False):
        import torch
        from sb3_contrib import MaskablePPO

        c = self.config = config
        torch.set_num_threads(c.torch_threads)
        self.run = RunFolder(c.out)
        self.run.out.mkdir(parents=True, exist_ok=True)
        (self.run.out / "labels").mkdir(exist_ok=True)
        self.run.state.update(round=0, labels=0)
        # the network and its file format are MaskablePPO's (ppo:PATH plays the result); its env only gives the spaces
        self.venv = make_vec_env(("random",), 1, "batched", features=c.features, forcing=c.forcing, seed=c.seed)
        policy_kwargs = {"net_arch": {"pi": list(c.net_arch), "vf": list(c.net_arch)}}
        self.model = MaskablePPO("MlpPolicy", self.venv, policy_kwargs=policy_kwargs, seed=c.seed, verbose=0)
        self.evaluate = Evaluator(self.run, c.eval_opponents, c.best_by, games=c.eval_games, seed=c.eval_seed,
                                  forcing=c.forcing, jobs=c.workers, xlabel="labelled decisions")  # fmt: skip
        if resume:
            latest = self.run.out / "checkpoints" / "latest.zip"
            state = self.run.out / "checkpoints" / "state.json"
            if state.exists():
                self.run.state.update(json.loads(state.read_text()))
            if latest.exists():
                restore_checkpoint(self.model, latest, c.features)
            self.run.log(f"resumed {self.run.out} at round {self.run.state['round']}")
        elif c.init:
            self.start_from(DEFAULT_MODEL if c.init == "ppo" else Path(c.init))

    def start_from(self, path: Path) -> None:
        """The network's first weights from the model file ``path`` (read weights-only)."""
        saved = read_model(path)
        if saved.features != self.config.features:
            raise ValueError(f"init {str(path)!r} reads {saved.features!r} features, the run {self.config.features!r}")
        try:
            self.model.policy.load_state_dict(saved.policy_state)
        except RuntimeError as err:
            raise ValueError(f"init {str(path)!r} does not fit net_arch {self.config.net_arch}: {err}") from err
        self.run.log(f"the network starts from {path}")

    def shard(self, round_: int, chunk: int) -> Path:
        return self.run.out / "labels" / f"r{round_:02d}_{chunk:04d}.npz"

    def student(self, round_: int) -> Agent:
        if round_ == 0:
            return GreedyAgent()
        return PolicyAgent(NumpyPolicy.from_sb3(self.model.policy), deterministic=True)

    def labels(self, rounds: int) -> ImitationData:
        """Every shard of rounds ``0 .. rounds - 1``."""
        parts = [ImitationData.load(p, self.config.features)[0] for r in range(rounds)
                 for p in sorted((self.run.out / "labels").glob(f"r{r:02d}_*.npz"))]  # fmt: skip
        return ImitationData.concatenate(parts)

    def play_round(self, round_: int) -> dict[str, Any]:
        c, student = self.config, self.student(round_)
        totals: dict[str, Any] = {"play_s": 0.0, "label_s": 0.0, "searched": 0, "meld_labels": 0, "wins": 0,
                                  "draws": 0, "losses": 0}  # fmt: skip
        for k in range(-(-c.games // c.chunk)):
            path = self.shard(round_, k)
            if path.exists():
                continue
            data, timing = play_and_label(student, c, round_, k)
            tmp = path.with_name(path.stem + ".tmp.npz")
            data.save(tmp, {"features": c.features, "round": round_, "chunk": k, "playouts": c.playouts, **timing})
            os.replace(tmp, path)
            for key in totals:
                totals[key] += timing[key]
            self.run.log(f"round {round_} shard {k}: {timing['searched']} searched + {timing['meld_labels']} meld "
                         f"labels, play {timing['play_s']:.1f} s, label {timing['label_s']:.1f} s")  # fmt: skip
        return totals

    def run_rounds(self) -> dict[str, Any]:
        c, run = self.config, self.run
        while True:
            if run.state.get("pending_eval") is not None:  # the round's fit is saved; its evaluation is owed
                r, t0 = run.state["pending_eval"], time.perf_counter()
                self.evaluate(self.model, run.state["labels"], stage=f"round{r}")
                run.append_csv(
                    "rounds.csv", [{**run.state.pop("round_times"), "eval_s": round(time.perf_counter() - t0, 1)}]
                )
                run.state["pending_eval"] = None
                run.write_state(run.state["labels"])
            if run.state["round"] >= c.rounds:
                break
            r = run.state["round"]
            totals = self.play_round(r)
            t0 = time.perf_counter()
            data = self.labels(r + 1)
            run.append_csv("bc.csv", fit_imitation(self.model.policy, data, c.imitation(), c.seed + r, f"round{r}",
                                                   run.log))  # fmt: skip
            times = {"round": r, "labels": len(data), **{k: round(v, 1) if isinstance(v, float) else v
                     for k, v in totals.items()}, "fit_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
            self.save(f"round{r}.zip")
            run.state.update(round=r + 1, labels=len(data), pending_eval=r, round_times=times)
            run.write_state(len(data))
        shutil.copyfile(run.out / "checkpoints" / "latest.zip", run.out / "final.zip")
        run.log(f"done: {c.rounds} rounds, {run.state['labels']:,} labelled decisions, {run.elapsed():.0f} s; best "
                f"vs {c.best_by} {run.state['best_score']:.3f} -> {run.out / 'best.zip'}")  # fmt: skip
        return run.state

    def save(self, name: str) -> None:
        ck = self.run.out / "checkpoints"
        ck.mkdir(exist_ok=True)
        self.model.save(ck / "latest.tmp.zip")
        os.replace(ck / "latest.tmp.zip", ck / "latest.zip")
        shutil.copyfile(ck / "latest.zip", self.run.out / name)


def main(argv: list[str] | None = None) -> int:
    """``train.py exit``: a new run (``--out``) or ``--resume RUN`` (its config; ``--rounds`` may grow)."""
    parser = argparse.ArgumentParser(prog="train.py exit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR (its config.json is used)")
    args = vars(knobs.add_flags(parser, ExItConfig).parse_args(argv))
    resume = args.pop("resume", None)
    try:
        if resume:
            path = Path(resume) / "config.json"
            if not path.exists():
                raise ValueError(f"--resume {resume}: no config.json there (not a run folder)")
            extra = sorted(set(args) - {"rounds", "torch_threads", "workers"})
            if extra:
                raise ValueError(f"--resume takes its config from {path}; only --rounds, --torch-threads and "
                                 f"--workers may change, got {extra}")  # fmt: skip
            config = knobs.from_dict(ExItConfig, {**json.loads(path.read_text()), **args, "out": str(resume)})
        else:
            config = knobs.from_dict(ExItConfig, args)
            if (Path(config.out) / "config.json").exists():
                raise ValueError(f"{config.out} already holds a run: use --resume {config.out} or another --out")
        config.validate()
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    Path(config.out).mkdir(parents=True, exist_ok=True)
    (Path(config.out) / "config.json").write_text(json.dumps(knobs.to_dict(config), indent=2) + "\n")
    try:
        ExItRun(config, resume=bool(resume)).run_rounds()
    except KeyboardInterrupt:
        print(f"\ninterrupted: the shards made are kept; continue with: python train.py exit --resume {config.out}",
              file=sys.stderr)  # fmt: skip
        return 130
    return 0
