"""A policy's evaluation on the duplicate deals of ``conquian-evaluate --seed S``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.base import Agent
from agents.networks.batched import BatchPolicy
from agents.networks.ppo import NumpyPolicy, PolicyAgent
from agents.scorer.scorer import ActionScorer, ScorerAgent
from conquian_arena.pair import pair_score, play_pair
from conquian_env.rules import STANDARD, Rules

from .run import RunFolder, plot_learning_curve


class ScorerModel:
    """An action scorer being trained, in the shape :class:`Evaluator` takes (``agent``, ``save``,
    ``suffix``); ``scorer`` is ``None`` until the first fit gives it weights."""

    suffix = ".npz"

    def __init__(self, scorer: ActionScorer | None = None) -> None:
        self.scorer = scorer

    def agent(self) -> Agent:
        if self.scorer is None:
            raise RuntimeError("the scorer has not been fitted yet")
        return ScorerAgent.from_scorer(self.scorer)

    def save(self, path: str | Path) -> None:
        if self.scorer is None:
            raise RuntimeError("the scorer has not been fitted yet")
        self.scorer.save(path)


def evaluate_policy(policy: NumpyPolicy, spec: str, games: int, seed: int, *, rules: Rules = STANDARD,
                    batched: bool = True, jobs: int = 1) -> dict[str, Any]:  # fmt: skip
    """The deterministic policy against the bot ``spec`` on the duplicate deals of ``conquian-evaluate
    --seed SEED`` (:func:`conquian_arena.pair.play_pair`; ``batched``: on the batched engine
    where ``spec`` has a batched form; ``rules``: the games' :class:`~conquian_env.rules.Rules`), as W/D/L and the
    score with its interval over deals."""
    learner, learner_batch = PolicyAgent(policy, deterministic=True), BatchPolicy(policy, deterministic=True)
    played = play_pair(learner, spec, games, seed, rules=rules, jobs=jobs, a_batch=learner_batch if batched else None)
    return {"opponent": spec, **pair_score(played)}


def evaluate_agent(agent: Agent, spec: str, games: int, seed: int, *, rules: Rules = STANDARD,
                   jobs: int = 1) -> dict[str, Any]:  # fmt: skip
    """A bot object against the bot ``spec`` on the duplicate deals of ``conquian-evaluate --seed
    SEED``, game by game, as W/D/L and the score with its interval over deals."""
    return {"opponent": spec, **pair_score(play_pair(agent, spec, games, seed, rules=rules, jobs=jobs))}


def model_suffix(model: Any) -> str:
    """The file suffix of ``model``'s saves: ``.zip`` for an SB3 model, else its ``suffix``."""
    return ".zip" if hasattr(model, "policy") else model.suffix


class Evaluator:
    """One evaluation of a model (:func:`evaluate_policy` against each of ``opponents``): a row per
    opponent in ``eval.csv``, the log, ``best.zip`` (``best.npz`` for a scorer) when the score
    against ``best_by`` is the best so far, and ``learning_curve.png`` (its second panel from the
    table ``regret_table``, where the run keeps one)."""

    def __init__(self, run: RunFolder, opponents: tuple[str, ...], best_by: str, *, games: int, seed: int,
                 rules: Rules = STANDARD, batched: bool = True, jobs: int = 1,
                 xlabel: str = "learner steps", regret_table: str = "regret.csv"):  # fmt: skip
        if best_by not in opponents:
            raise ValueError(f"best_by {best_by!r} must be one of the evaluation opponents {list(opponents)}")
        self.run, self.opponents, self.best_by, self.xlabel = run, opponents, best_by, xlabel
        self.regret_table = regret_table
        self.settings = dict(games=games, seed=seed, rules=rules, batched=batched, jobs=jobs)

    def __call__(self, model, step: int, stage: str = "ppo") -> list[dict[str, Any]]:
        """Evaluate ``model``: an SB3 model (its policy, on the batched engine where it can), or any
        object with ``agent()`` (the bot to evaluate), ``save(path)`` and a file ``suffix`` (and
        optionally ``batch_agent()``, its batched form, played on the batched engine where it can)."""
        run, rows = self.run, []
        suffix = model_suffix(model)
        if hasattr(model, "policy"):
            policy = NumpyPolicy.from_sb3(model.policy)

            def play(spec: str) -> dict[str, Any]:
                return evaluate_policy(policy, spec, **self.settings)
        else:
            agent = model.agent()
            fixed = {k: self.settings[k] for k in ("games", "seed", "rules", "jobs")}
            batch = model.batch_agent() if hasattr(model, "batch_agent") and self.settings["batched"] else None

            def play(spec: str) -> dict[str, Any]:
                if batch is not None:  # on the batched engine where the opponent has a batched form
                    return {"opponent": spec, **pair_score(play_pair(agent, spec, a_batch=batch, **fixed))}
                return evaluate_agent(agent, spec, **fixed)

        for spec in self.opponents:
            r = play(spec)
            rows.append({"stage": stage, "step": step, "seconds": round(run.elapsed(), 1), **r})
            run.log(f"eval @ {step:,}: vs {spec}: W/D/L {r['wins']}/{r['draws']}/{r['losses']}, score {r['score']:.3f} "
                    f"[{r['low']:.3f}, {r['high']:.3f}], decided games won {r['decided_won']:.1%}")  # fmt: skip
        run.append_csv(
            "eval.csv", [{k: round(v, 4) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
        )
        run.state["last_eval_step"] = step
        best = next(r["score"] for r in rows if r["opponent"] == self.best_by)
        if best > run.state["best_score"]:
            run.state["best_score"], run.state["best_step"] = best, step
            run.save_model(model, f"best{suffix}")
            run.log(f"new best model (score {best:.3f} vs {self.best_by}) -> {run.out / f'best{suffix}'}")
        plot_learning_curve(run.out / "eval.csv", run.out / "learning_curve.png", xlabel=self.xlabel,
                            regret_csv=run.out / self.regret_table)  # fmt: skip
        return rows
