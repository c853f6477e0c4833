"""The expert-iteration recipe (``conquian-train exit``): the search labels, the network learns, the network plays on.

::

    conquian-train exit --out runs/exit              # the shipped recipe (make train: python train.py exit)
    conquian-train exit --resume runs/exit --rounds 8
    conquian-train exit --help                       # every knob (the shared ones: conquian_train.settings)

Each **round** ``r``:

1. **Play.** The student plays ``games`` games against the ``opponents`` (seats alternate;
   deals from ``derive_seed(seed, EXIT_GAMES, r, game)``).  Round 0's student is ``greedy``; later
   rounds' student is the network of the round before, playing its most likely action.
2. **Label.** Every decision of the student with a choice is kept as the policy sees it
   (``features``) with a snapshot of the player's view.  Outside the meld phase the compiled
   search (:func:`agents.search.pimc.analyze`, at most ``playouts`` playouts per position, the
   actions racing as in the ``pimc`` bot at ``z``) gives the value of every legal action; in
   the meld phase the label is greedy's meld plan (the search melds by it too).  Every ``chunk`` games the labels go
   to a shard ``labels/r{r}_{k}.npz`` (an :class:`conquian_train.imitation.ImitationData`, read
   without pickles).  A shard on disk is never made again: a killed run resumes at the
   first missing one, with the same student, so it makes the same games.
3. **Learn.** The network is fitted on every shard of every round so far, ``epochs`` passes,
   continuing from the last round's weights; the epoch with the lowest regret on held-out
   games is kept.  ``network='scorer'`` (the default) is the action scorer
   (:mod:`agents.scorer.scorer`, ``scorer:PATH`` plays it): one small MLP scores each legal action
   from that action's own features, fitted by :func:`conquian_train.scorer_fit.fit_scorer`
   (cross-entropy against ``softmax(values / temperature)``).  ``network='ppo'`` is an SB3
   ``MaskablePPO`` policy with one logit per action id (``ppo:PATH`` plays it), fitted by
   :func:`conquian_train.imitation.fit_imitation` (``loss``; its value head the results).
4. **Evaluate** against ``eval_opponents`` on ``conquian-evaluate``'s duplicate deals at
   ``eval_seed``: ``eval.csv`` (its ``step`` is the labelled decisions so far),
   ``learning_curve.png``, ``best.npz`` (``best.zip`` for ppo; best against ``best_by``).

The run folder: ``config.json``, ``train.log``, ``labels/``, ``rounds.csv`` (where the time
went: play, label, fit, evaluate), ``eval.csv``, ``bc.csv`` (the fit's epochs), ``regret.csv``
(the kept fit's regret on held-out games by round, and greedy's: the curve's second panel),
``checkpoints/latest.npz`` and ``state.json`` (one checkpoint, swapped in whole), ``round{r}.npz``,
``best.npz``, ``final.npz`` (``.zip`` for ppo), ``run.lock``.  A killed run resumes into the very run
that was never stopped (docs/training.md, "Run folders").
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, PlayerView
from agents.greedy.greedy import GreedyAgent
from agents.networks.ppo import (
    DEFAULT_MODEL,
    NumpyPolicy,
    PolicyAgent,
    load_policy,
    read_model,
    stamp_model,
)
from agents.registry import make_agent
from agents.scorer.scorer import DEFAULT_SCORER, ScorerAgent, load_scorer
from conquian_arena import knobs, runfiles
from conquian_arena.knobs import knob
from conquian_env.game import MELD
from conquian_env.seeding import derive_seed

from ..envs import make_vec_env
from ..evaluation import Evaluator, ScorerModel, model_suffix
from ..imitation import ImitationData, ImitationSettings, fit_imitation, play_recorded
from ..policy_files import check_same_layout, restore_checkpoint
from ..run import RunFolder, RunFolderError
from ..scorer_fit import ScorerSettings, fit_scorer, initial_scorer
from ..seeding import EXIT_ANALYSIS, EXIT_GAMES
from ..settings import RunSettings, recipe_knobs
from . import Recipe, parser, run_recipe


@dataclass
class ExItConfig(RunSettings):
    """Every knob of an expert-iteration run (see the module docstring for the recipe): the shared
    ones of :class:`~conquian_train.settings.RunSettings`, some with this recipe's defaults, and its own."""

    # the shared knobs' defaults for this recipe (each keeps its place among the shared ones)
    out: str = knob("runs/exit", "run folder (config, labels, logs, checkpoints, models)")
    eval_games: int = knob(2000, "games per evaluation opponent (duplicate deals, seats swapped)", low=1)
    workers: int = knob(1, "processes for the evaluations (0: all cores)", low=0)

    rounds: int = knob(5, "rounds of play, label, learn, evaluate (5 x 20000 games: 1.2M labelled decisions)", low=1)
    games: int = knob(20000, "games the student plays per round", low=1)
    chunk: int = knob(100, "games per label shard (the unit a killed run redoes)", low=1)
    playouts: int = knob(
        500, "playouts of the search per labelled position at most (500 teach as well as 3000)", low=1, high=10**9
    )
    z: float = knob(
        3.0, "the search's race: an action this many standard errors behind stops (0: no race)", low=0, high=1000
    )
    opponents: tuple[str, ...] = knob(
        ("greedy",), "bot specs the student plays while its positions are labelled", spec=True
    )
    features: str = knob(
        "meld",
        "network input: 'meld' (raw observation + meld features, greedy's choice among them) or 'raw'",
        choices=("meld", "raw"),
    )
    network: str = knob(
        "scorer",
        "'scorer' (agents.scorer.scorer: one small MLP scores each legal action from its own features; "
        "scorer:PATH plays it) or 'ppo' (a MaskablePPO policy, one logit per action id; ppo:PATH plays it)",
        choices=("scorer", "ppo"),
    )
    net_arch: tuple[int, ...] = knob((), "hidden layer sizes (none given: 128 128 for the scorer, 256 256 for ppo)")
    pool_after: int = knob(
        -1,
        "scorer only: the hidden layer whose outputs are joined by their mean and max over the position's candidates "
        "(deep sets: each candidate's score sees the others); -1: none, each candidate scored alone",
        low=-1,
    )
    init: str = knob("", "first weights: '' (random), 'scorer' or 'ppo' (the shipped model of that network), a file")
    epochs: int = knob(
        8, "passes over all labels so far, per round (the one with the lowest held-out regret kept)", low=1
    )
    lr: float = knob(1e-3, "learning rate (Adam)", above=0)
    temperature: float = knob(
        0.05, "scorer: the targets are softmax(values / T); ppo: scale of logits against values", above=0
    )
    value_coef: float = knob(0.5, "weight of the value head's loss", low=0)
    eval_start: bool = knob(
        True,
        "evaluate the network the run starts from (untrained: its random weights) before round 0: the curve's step 0",
    )

    def validate(self) -> None:
        """Raise ``ValueError`` naming the knob that is wrong (before any work starts)."""
        knobs.check(self)  # every knob's type and declared range
        if any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in self.net_arch):
            raise ValueError(f"net_arch must be positive layer sizes, got {self.net_arch!r}")
        self.validate_run()  # best_by among the evaluation opponents, their specs
        if not self.opponents:
            raise ValueError("opponents is empty")
        self.imitation()
        self.scorer_settings()
        if self.network == "scorer" and self.features != "meld":
            raise ValueError(f"the scorer reads the 'meld' features; features={self.features!r} needs network='ppo'")
        shipped = self.network
        if self.init and self.init != shipped and not Path(self.init).is_file():
            raise ValueError(f"init {self.init!r} is neither '', {shipped!r} (the shipped {shipped} model) "
                             "nor a model file")  # fmt: skip
        for spec in self.opponents:
            make_agent(spec, 0)  # a bad spec fails now, not after an hour

    def hidden(self) -> tuple[int, ...]:
        """The hidden layer sizes: ``net_arch``, or the network's default."""
        return tuple(int(n) for n in self.net_arch) or ((128, 128) if self.network == "scorer" else (256, 256))

    def scorer_settings(self) -> ScorerSettings:
        if self.pool_after >= 0 and self.network != "scorer":
            raise ValueError(f"pool_after={self.pool_after} is the scorer's; network={self.network!r} has none")
        return ScorerSettings(hidden=self.hidden(), epochs=self.epochs, lr=self.lr, temperature=self.temperature,
                              pool_after=None if self.pool_after < 0 else self.pool_after)  # fmt: skip

    def imitation(self) -> ImitationSettings:
        """The fit's settings (no label smoothing: the targets are the search's values)."""
        return ImitationSettings(
            epochs=self.epochs, lr=self.lr, smoothing=0.0, temperature=self.temperature,
            value_coef=self.value_coef, best_epoch=True,
        )  # fmt: skip


# --------------------------------------------------------------------------- play and label


class ViewRecorder(Agent):
    """Plays ``student``'s moves and keeps each decision with a choice: the policy's input,
    the mask, a snapshot of the view, and greedy's move where the phase is the meld."""

    def __init__(self, student: Agent, features: str):
        from agents.scorer.features import FeatureEncoder

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


def play_games(student: Agent, config: ExItConfig, round_: int, chunk: int) -> tuple[list[tuple], dict[str, int]]:
    """Games ``chunk * config.chunk ..`` of round ``round_`` played (the games of one shard): their
    decisions with a choice as rows ``(features, mask, view, greedy's meld label or -1, result, game id)``
    and the student's wins, draws and losses.  The same games as every time (seeds from the config)."""
    c = config
    recorder = ViewRecorder(student, c.features)
    opponents = {spec: make_agent(spec, c.seed + 1) for spec in c.opponents}
    rows, results = [], {"wins": 0, "draws": 0, "losses": 0}
    first = chunk * c.chunk
    games = range(first, min(first + c.chunk, c.games))
    for g, _, result in play_recorded(recorder, opponents, c.opponents, games,
                                      lambda g: derive_seed(c.seed, EXIT_GAMES, round_, g), c.rules,
                                      f"round {round_} game"):  # fmt: skip
        results["wins" if result > 0 else "draws" if result == 0 else "losses"] += 1
        rows += [
            (obs, mask, view, label, result, round_ * 1_000_000_000 + g) for obs, mask, view, label in recorder.rows
        ]
    return rows, results


def play_and_label(student: Agent, config: ExItConfig, round_: int, chunk: int) -> tuple[ImitationData, dict]:
    """Games ``chunk * config.chunk ..`` of round ``round_``, their decisions labelled; and timings."""
    from agents.search.pimc import analyze

    c, t0 = config, time.perf_counter()
    rows, results = play_games(student, c, round_, chunk)
    t_play = time.perf_counter() - t0
    searched = [i for i, r in enumerate(rows) if r[3] < 0]
    values = np.full((len(rows), len(rows[0][1]) if rows else 0), np.nan, np.float32)
    actions = np.array([r[3] for r in rows], np.int64)
    if searched:
        v, _, chosen = analyze([rows[i][2] for i in searched], iterations=c.playouts, z=c.z,
                               seed=derive_seed(c.seed, EXIT_ANALYSIS, round_, chunk))  # fmt: skip
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


#: expert iteration's keys of ``state.json`` (beside :data:`conquian_train.run.COMMON_STATE`)
EXIT_STATE: dict[str, str] = {
    "round": "count", "labels": "count", "pending_eval": "count or null", "round_times": "object",
}  # fmt: skip
#: the knobs a resume may change; the rest of ``config.json`` is the run's recipe
MAY_CHANGE = ("rounds", "torch_threads", "workers", "eval_start")
#: a label shard's name: ``r{round:02d}_{index:04d}.npz``
SHARD_NAME = re.compile(r"r(\d{2})_(\d{4})\.npz")


def recipe(config: ExItConfig) -> dict[str, Any]:
    """The knobs that make the run what it is: a checkpoint or a shard made with others is refused.
    ``pool_after`` at its default (-1, no pooling) is left out, so that a run from before the knob keeps
    its recipe."""
    return {k: v for k, v in recipe_knobs(config, ("out", *MAY_CHANGE)).items()
            if not (k == "pool_after" and v == -1)}  # fmt: skip


class ExItRun:
    """One expert-iteration run in its folder: shards, model, state; :meth:`run_rounds` does the rounds left.

    A checkpoint (``checkpoints/``: ``latest.npz`` or ``latest.zip``, ``state.json``) is taken when a
    round's fit is done and again when its evaluation is; a resume starts from it, cuts the CSV
    tables back to it, keeps every shard made with the run's recipe (an unreadable one is set aside
    as ``NAME.bad`` and made again; one made with other settings is refused) and makes the same
    games, labels, fits and files as the run that was never stopped."""

    def __init__(self, config: ExItConfig, resume: bool = False):
        import torch

        c = self.config = config
        torch.set_num_threads(c.torch_threads)
        self.run = RunFolder(c.out, recipe(c), start={"round": 0, "labels": 0})
        self.run.out.mkdir(parents=True, exist_ok=True)
        (self.run.out / "labels").mkdir(exist_ok=True)
        if c.network == "scorer":
            self.model: Any = ScorerModel()
        else:
            from sb3_contrib import MaskablePPO

            # the file format is MaskablePPO's (ppo:PATH plays the result); its env only gives the spaces
            self.venv = make_vec_env(("random",), 1, features=c.features, rules=c.rules, seed=c.seed)
            policy_kwargs = {"net_arch": {"pi": list(c.hidden()), "vf": list(c.hidden())}}
            self.model = MaskablePPO("MlpPolicy", self.venv, policy_kwargs=policy_kwargs, seed=c.seed, verbose=0)
            stamp_model(self.model, c.features)  # its files carry the feature set and layout hash
        self.suffix = model_suffix(self.model)
        self.evaluate = Evaluator(self.run, c.eval_opponents, c.best_by, games=c.eval_games, seed=c.eval_seed,
                                  rules=c.rules, jobs=c.processes, xlabel="labelled decisions")  # fmt: skip
        state = self.run.open_checkpoint(EXIT_STATE)
        if state is not None and not resume:
            raise RunFolderError(f"{c.out} already holds a run: use --resume {c.out} or another --out")
        if state is not None:
            latest = self.run.checkpoints / f"latest{self.suffix}"
            if c.network == "scorer":
                self.model.scorer = load_scorer(latest)
            else:
                restore_checkpoint(self.model, latest, c.features)
        elif c.init:  # no checkpoint yet: the run's first weights, as when it began
            shipped = DEFAULT_SCORER if c.network == "scorer" else DEFAULT_MODEL
            self.start_from(shipped if c.init == c.network else Path(c.init))
        if resume:
            self.run.log(f"resumed {self.run.out} at round {self.run.state['round']}")
        self.check_shards()

    def start_from(self, path: Path) -> None:
        """The network's first weights from the model file ``path`` (read weights-only)."""
        if self.config.network == "scorer":
            scorer = load_scorer(path)
            if [w.shape[1] for w, _ in scorer.layers[:-1]] != list(self.config.hidden()):
                raise ValueError(f"init {str(path)!r} has hidden layers {[w.shape[1] for w, _ in scorer.layers[:-1]]}"
                                 f", the run {list(self.config.hidden())}")  # fmt: skip
            pool = self.config.scorer_settings().pool_after
            if scorer.pool_after != pool:
                raise ValueError(f"init {str(path)!r} pools after layer {scorer.pool_after} (None: it does not), "
                                 f"the run after {pool} (its pool_after knob)")  # fmt: skip
            self.model.scorer = scorer
            self.run.log(f"the network starts from {path}")
            return
        saved = read_model(path)
        if saved.features != self.config.features:
            raise ValueError(f"init {str(path)!r} reads {saved.features!r} features, the run {self.config.features!r}")
        check_same_layout(saved, f"init {str(path)!r}", "start from a model of this version's layout, or from "
                          "nothing (--init '')")  # fmt: skip
        try:
            self.model.policy.load_state_dict(saved.policy_state)
        except RuntimeError as err:
            raise ValueError(f"init {str(path)!r} does not fit net_arch {self.config.hidden()}: {err}") from err
        self.run.log(f"the network starts from {path}")

    def shard(self, round_: int, chunk: int) -> Path:
        return self.run.out / "labels" / f"r{round_:02d}_{chunk:04d}.npz"

    def shards(self, round_: int) -> list[Path]:
        """The shards of round ``round_`` on disk, in order."""
        return sorted(p for p in (self.run.out / "labels").glob(f"r{round_:02d}_*.npz") if SHARD_NAME.fullmatch(p.name))

    def check_shards(self) -> None:
        """Every shard on disk read whole and its settings checked: an unreadable one is set aside
        (``NAME.bad``, made again), one of another run or another place refused (:class:`RunFolderError`)."""
        c, labels = self.config, self.run.out / "labels"
        for path in sorted(labels.glob("*.tmp.npz")):  # an older version's temporary file
            path.unlink()
            self.run.log(f"deleted {path.name}, the half-written shard of a killed session")
        mine = recipe(c)
        for path in sorted(labels.iterdir()):
            match = SHARD_NAME.fullmatch(path.name)
            if match is None:
                continue
            try:
                _, meta = ImitationData.load(path, c.features)
            except Exception as err:  # a cut or damaged file: its games are labelled again
                aside = self.run.aside(path, "bad")
                self.run.log(f"shard {path} is unreadable ({type(err).__name__}: {err}): set aside as {aside.name}; "
                             "its games are labelled again")  # fmt: skip
                continue
            where = (int(match[1]), int(match[2]))
            if (meta.get("round"), meta.get("chunk")) != where:
                raise RunFolderError(f"shard {path} holds round {meta.get('round')!r} shard {meta.get('chunk')!r}, "
                                     f"its name says round {where[0]} shard {where[1]}: move it out of {labels} and "
                                     "its games are labelled again")  # fmt: skip
            theirs = meta.get("settings")
            if theirs is None:  # from before shards named their settings: what they do name must agree
                theirs = {k: meta[k] for k in ("playouts", "features") if k in meta}
            changed = {k: (theirs[k], mine.get(k)) for k in sorted(theirs) if theirs[k] != mine.get(k)}
            if changed:
                said = ", ".join(f"{k} {a!r} (this run {b!r})" for k, (a, b) in changed.items())
                raise RunFolderError(f"shard {path} was made with other settings: {said}; it belongs to another run "
                                     f"(move it out of {labels} and its games are labelled again)")  # fmt: skip

    def student(self, round_: int) -> Agent:
        """Who plays round ``round_``: greedy in round 0, then the network of the round before (of
        a round already fitted: its ``round{r-1}`` file, to make a lost shard again)."""
        if round_ == 0:
            return GreedyAgent()
        if round_ < self.run.state["round"]:
            path = self.run.out / f"round{round_ - 1}{self.suffix}"
            if not path.is_file():
                raise RunFolderError(f"a shard of round {round_} is missing and {path} (its student) too: "
                                     "neither can be made again")  # fmt: skip
            if self.config.network == "scorer":
                return ScorerAgent.from_scorer(load_scorer(path))
            return PolicyAgent(load_policy(path), deterministic=True)
        if self.config.network == "scorer":
            return self.model.agent()
        return PolicyAgent(NumpyPolicy.from_sb3(self.model.policy), deterministic=True)

    def labels(self, rounds: int) -> ImitationData:
        """Every shard of rounds ``0 .. rounds - 1``."""
        parts = [ImitationData.load(p, self.config.features)[0] for r in range(rounds) for p in self.shards(r)]
        return ImitationData.concatenate(parts)

    def play_round(self, round_: int) -> dict[str, Any]:
        """The missing shards of round ``round_`` made; the round's totals over all its shards on disk."""
        c, student = self.config, self.student(round_)
        settings = recipe(c)
        for k in range(-(-c.games // c.chunk)):
            path = self.shard(round_, k)
            if runfiles.check_entry(path):  # made already (a link or a folder in its place: refused)
                continue
            data, timing = play_and_label(student, c, round_, k)
            meta = {"features": c.features, "round": round_, "chunk": k, "index": k, "playouts": c.playouts,
                    "seed": c.seed, "games_per_shard": c.chunk, "recipe": self.run.recipe, "settings": settings,
                    **timing}  # fmt: skip
            self.run.write_file(f"labels/{path.name}", lambda tmp, data=data, meta=meta: data.save(tmp, meta))
            self.run.log(f"round {round_} shard {k}: {timing['searched']} searched + {timing['meld_labels']} meld "
                         f"labels, play {timing['play_s']:.1f} s, label {timing['label_s']:.1f} s")  # fmt: skip
        totals: dict[str, Any] = {"play_s": 0.0, "label_s": 0.0, "searched": 0, "meld_labels": 0, "wins": 0,
                                  "draws": 0, "losses": 0}  # fmt: skip
        for path in self.shards(round_):
            _, meta = ImitationData.load(path, c.features)
            for key in totals:
                totals[key] += meta.get(key, 0)
        return totals

    def checkpoint(self) -> None:
        """The network and the state: one checkpoint (:meth:`conquian_train.run.RunFolder.save_checkpoint_files`)."""
        self.run.save_checkpoint_files({f"latest{self.suffix}": self.model.save}, self.run.state["labels"])

    def evaluate_start(self) -> None:
        """The curve's step 0: the network the run starts from, before it has seen a label (the
        scorer's random weights are those round 0's fit starts from, so the run is unchanged)."""
        c, run = self.config, self.run
        if c.network == "scorer" and self.model.scorer is None:
            self.model.scorer = initial_scorer(c.hidden(), c.seed, c.scorer_settings().pool_after)
        run.log("evaluating the network the run starts from (step 0)")
        self.evaluate(self.model, 0, stage="start")
        self.checkpoint()

    def run_rounds(self) -> dict[str, Any]:
        c, run = self.config, self.run
        if c.eval_start and run.state["round"] == 0 and run.state.get("last_eval_step") is None:
            self.evaluate_start()
        for r in range(min(run.state["round"], c.rounds)):  # a shard lost or set aside since its round: again
            if len(self.shards(r)) < -(-c.games // c.chunk):
                self.play_round(r)
        while True:
            if run.state.get("pending_eval") is not None:  # the round's fit is saved; its evaluation is owed
                r, t0 = run.state["pending_eval"], time.perf_counter()
                self.evaluate(self.model, run.state["labels"], stage=f"round{r}")
                run.append_csv(
                    "rounds.csv", [{**run.state.pop("round_times"), "eval_s": round(time.perf_counter() - t0, 1)}]
                )
                run.state["pending_eval"] = None
                self.checkpoint()
            if run.state["round"] >= c.rounds:
                break
            r = run.state["round"]
            totals = self.play_round(r)
            t0 = time.perf_counter()
            data = self.labels(r + 1)
            if c.network == "scorer":
                self.model.scorer, report = fit_scorer(data, c.scorer_settings(), c.seed + r, start=self.model.scorer,
                                                       log=run.log, stage=f"round{r}")  # fmt: skip
            else:
                report = fit_imitation(self.model.policy, data, c.imitation(), c.seed + r, f"round{r}", run.log)
            run.append_csv("bc.csv", report)
            if c.network == "scorer":  # the kept fit's held-out regret, and greedy's, for the curve
                regret = {"round": r, "labels": len(data), "held_out_regret": self.model.scorer.meta["held_out_regret"],
                          "greedy_held_out_regret": report[0]["greedy_held_out_regret"]}  # fmt: skip
                run.append_csv("regret.csv", [regret])
            times = {"round": r, "labels": len(data), **{k: round(v, 1) if isinstance(v, float) else v
                     for k, v in totals.items()}, "fit_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
            run.save_model(self.model, f"round{r}{self.suffix}")
            run.state.update(round=r + 1, labels=len(data), pending_eval=r, round_times=times)
            self.checkpoint()
        runfiles.copy_atomic(run.checkpoints / f"latest{self.suffix}", run.out / f"final{self.suffix}")
        run.log(f"done: {c.rounds} rounds, {run.state['labels']:,} labelled decisions, {run.elapsed():.0f} s; best "
                f"vs {c.best_by} {run.state['best_score']:.3f} -> {run.out / f'best{self.suffix}'}")  # fmt: skip
        return run.state


def holds_run(out: Path) -> bool:
    """An expert-iteration run is in ``out`` once it has a ``config.json`` (its shards are work done)."""
    return (out / "config.json").exists()


def main(argv: list[str] | None = None, prog: str = "conquian-train exit") -> int:
    """``conquian-train exit``: a new run (``--out``) or ``--resume RUN`` (its config; ``--rounds`` may grow)."""
    made = parser(prog, __doc__, ExItConfig, formatter_class=argparse.RawDescriptionHelpFormatter)
    args = vars(made.parse_args(sys.argv[1:] if argv is None else argv))
    return run_recipe(ExItConfig, args, MAY_CHANGE, lambda config, resume: ExItRun(config, resume=resume).run_rounds(),
                      holds_run=holds_run, prog=prog)  # fmt: skip


def quick(root: Path, workers: int) -> list[tuple[Path, list[str], list[str]]]:
    """The recipe at a tiny size (:data:`conquian_train.recipes.QuickRun`)."""
    out = root / "run"
    start = ["--out", str(out), "--rounds", "2", "--games", "8", "--chunk", "4", "--playouts", "60", "--epochs", "2",
             "--eval-games", "8", "--seed", "3", "--workers", str(workers)]  # fmt: skip
    return [(out, start, ["--resume", str(out)])]


RECIPE = Recipe("exit", "expert iteration: the compiled search labels, a network (scorer or ppo) learns", (ExItConfig,),
                main, quick)  # fmt: skip
