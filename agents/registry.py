"""Build bots from spec strings: ``random``, ``greedy``, ``ismcts:iterations=400``,
``ppo`` (the shipped model), ``ppo:PATH.zip``, ``scorer`` (the shipped action scorer),
``scorer:PATH.npz``, ``guided:PATH``, ``python:package.module:ClassName``.

Grammar: ``NAME`` or ``NAME:key=value,key=value``.  Some kinds take a positional
argument first: ``ppo:PATH[,key=value...]`` (a saved MaskablePPO model; ``scorer``,
``guided`` and ``rllib`` take a path the same way) and
``python:MODULE:CLASS[,key=value...]`` (any :class:`~agents.base.Agent` subclass, built
with the keyword arguments given).  Values are parsed as int, float, bool
(``true``/``false``) or left as text.  A bad spec raises ``ValueError`` that lists the
known bots and their parameters.

Each bot declares the allowed values of its parameters on its constructor
(:func:`agents.params.bounded`); :func:`check_spec` checks a spec against them without
building the bot, and :func:`make_agent` refuses any value outside them before the bot is
built.  A ``python:`` spec imports its module, which runs the module's code:
:func:`refuse_code` keeps specs read from a file from doing so unless the user allows it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import Agent, RandomAgent
from .params import Integer, ParamError, Removed, bounds_of


@dataclass(frozen=True)
class BotInfo:
    factory: Callable[[], type[Agent]]  # imported lazily: torch only for ppo
    summary: str
    params: dict[str, str]  # name -> "default, meaning"
    positional: str | None = None


def _greedy() -> type[Agent]:
    from .greedy import GreedyAgent

    return GreedyAgent


def _ismcts() -> type[Agent]:
    from .search import SearchAgent

    return SearchAgent


def _belief_search() -> type[Agent]:
    from .search import BeliefSearchAgent

    return BeliefSearchAgent


def _ismcts_py() -> type[Agent]:
    from .ismcts import ISMCTSAgent

    return ISMCTSAgent


def _rollout() -> type[Agent]:
    from .rollout import RolloutAgent

    return RolloutAgent


def _guided() -> type[Agent]:
    from .search import GuidedSearchAgent

    return GuidedSearchAgent


def _scorer() -> type[Agent]:
    from .scorer import ScorerAgent

    return ScorerAgent


def _rllib() -> type[Agent]:
    from .rllib_bot import RLlibAgent

    return RLlibAgent


def _ppo() -> type[Agent]:
    from .ppo import PPOAgent

    return PPOAgent


KNOWN_BOTS: dict[str, BotInfo] = {
    "random": BotInfo(lambda: RandomAgent, "uniform over legal actions", {}),
    "greedy": BotInfo(
        _greedy,
        "rule-based: takes what improves its hand, goes out when it can, discards the least useful card",
        {},
    ),
    "ismcts": BotInfo(
        _ismcts,
        "compiled search (needs numba): paired greedy playouts of every action on plausible deals, racing",
        {
            "time": "0.15, seconds per searched decision at most (the race ends most decisions sooner)",
            "iterations": "none, playouts per decision instead of time (reproducible with a seed)",
            "z": "3, standard errors behind the leader at which an action leaves the race (0: never)",
            "tries": "10, deals drawn per determinization to find one explaining the opponent's play",
            "take_options": "false, value a take with each discard that can follow it (not only greedy's)",
        },
    ),
    "search": BotInfo(
        _belief_search,
        "the compiled search with deals drawn from the belief model of the opponent's hand (needs numba)",
        {
            "time": "0.15, seconds per searched decision at most (the race ends most decisions sooner)",
            "iterations": "none, playouts per decision instead of time (reproducible with a seed)",
            "z": "3, standard errors behind the leader at which an action leaves the race (0: never)",
            "tries": "1, belief deals drawn per determinization, the most plausible kept (1: the belief alone)",
            "take_options": "false, value a take with each discard that can follow it (not only greedy's)",
            "belief": "none, a belief model file (none: the shipped agents/data/conquian_belief.npz)",
            "uniform": "false, uniform deals instead of the belief's (with tries > 1: the plausibility filter)",
            "inner": "0, deals of a second ply (the searcher's first playout decision searched on its re-deals)",
            "leaf": "none, greedy steps of a playout before the leaf value is read instead (none: played out)",
            "value": "none, a leaf value model file (conquian_train.value fit), read at the leaf (needs leaf)",
        },
    ),
    "guided": BotInfo(
        _guided,
        "the compiled search guided by a network: its prior (only the most likely actions race) and playout policy",
        {
            "keep": "3, legal actions (by the policy's ranking) that are searched (0: all)",
            "steps": "0, the searching player's next decisions in each playout that the network makes (a scorer)",
            "both": "false, the network also makes the opponent's decisions in the playouts (steps counts both)",
            "time": "0.15, seconds per searched decision at most",
            "iterations": "none, playouts per decision instead of time",
            "z": "3, standard errors behind the leader at which an action leaves the race",
            "tries": "10, deals drawn per determinization to find one explaining the opponent's play",
        },
        positional="PATH.zip",
    ),
    "ismcts-py": BotInfo(
        _ismcts_py,
        "the Python information-set Monte Carlo tree search (readable reference; slow)",
        {
            "iterations": "500, simulations per decision",
            "time": "none, seconds per decision (overrides iterations when given)",
            "c": "0.7, UCB exploration constant (scores in [0, 1])",
            "infer": "true, prefer deals that explain the opponent's refusals and discards",
        },
    ),
    "rollout": BotInfo(
        _rollout,
        "flat Monte Carlo: every legal action scored by paired greedy rollouts on sampled deals",
        {
            "samples": "32, determinizations per decision (each action is rolled out on each)",
            "margin": "0, leave the greedy choice only for a paired gain of this many standard errors",
            "infer": "true, prefer deals that explain the opponent's refusals and discards",
            "batch": "false, run the rollouts together on the batched engine (needs numba; same games, faster)",
        },
    ),
    "ppo": BotInfo(
        _ppo,
        "a MaskablePPO model (sb3-contrib .zip from train.py); no path: the shipped model",
        {"deterministic": "true, argmax instead of sampling"},
        positional="[PATH.zip]",
    ),
    "scorer": BotInfo(
        _scorer,
        "the action scorer alone (a network from train.py exit scoring each legal action); no path: the shipped one",
        {},
        positional="[PATH.npz]",
    ),
    "rllib": BotInfo(
        _rllib,
        "an RLlib policy (a checkpoint of conquian_env.integrations.rllib / examples/rllib_selfplay.py)",
        {
            "module_id": "shared, the policy in a multi-policy checkpoint",
            "deterministic": "true, argmax instead of sampling",
        },
        positional="PATH",
    ),
    "python": BotInfo(
        lambda: Agent,
        "your own Agent subclass",
        {"any": "keyword arguments passed to the class"},
        positional="package.module:ClassName",
    ),
}

#: today's flat search by what it is (determinized flat Monte Carlo); ``ismcts`` is its old name
KNOWN_BOTS["pimc"] = KNOWN_BOTS["ismcts"]


def describe_bots() -> str:
    """Human-readable list of the known bots and their parameters (used in errors and --help)."""
    lines = []
    for name, info in KNOWN_BOTS.items():
        head = name + (f":{info.positional}" if info.positional else "")
        lines.append(f"  {head:<34} {info.summary}")
        for pname, text in info.params.items():
            lines.append(f"      {pname}={text}")
    return "\n".join(lines)


class SpecError(ValueError):
    """A bot spec that cannot be built."""


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _parse_params(spec: str, items: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in items:
        if not item:
            continue
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise SpecError(
                f"bad parameter {item!r} in bot spec {spec!r}: expected key=value\nknown bots:\n{describe_bots()}"
            )
        key = key.strip()
        if key in params:
            raise SpecError(f"parameter {key!r} given twice in bot spec {spec!r}")
        params[key] = _parse_value(value.strip())
    return params


def spec_kind(spec: str) -> str:
    """The bot kind a spec names (``ismcts`` for ``ismcts:time=1``), as :func:`parse_spec` reads it."""
    return spec.strip().partition(":")[0].lower()


def parse_spec(spec: str) -> tuple[str, str | None, dict[str, Any]]:
    """Split a spec into (kind, positional argument or None, keyword parameters)."""
    if not isinstance(spec, str) or not spec.strip():
        raise SpecError(f"a bot spec is a non-empty string, got {spec!r}\nknown bots:\n{describe_bots()}")
    spec = spec.strip()
    kind, rest = spec_kind(spec), spec.partition(":")[2]
    if kind not in KNOWN_BOTS:
        raise SpecError(f"unknown bot {kind!r} in spec {spec!r}\nknown bots:\n{describe_bots()}")
    positional: str | None = None
    if kind == "python":
        module, sep, tail = rest.partition(":")
        cls_name, _, params_text = tail.partition(",")
        if not module or not sep or not cls_name:
            raise SpecError(f"bot spec {spec!r}: expected python:package.module:ClassName[,key=value...]")
        positional = f"{module}:{cls_name}"
        items = params_text.split(",") if params_text else []
    elif kind in ("ppo", "rllib", "guided", "scorer"):
        path, _, params_text = rest.partition(",")
        if path.startswith("path="):
            path = path[5:]
        elif "=" in path:  # no path: ppo:deterministic=false plays the shipped model
            path, params_text = "", rest
        positional = path or None
        items = params_text.split(",") if params_text else []
    else:
        items = rest.split(",") if rest else []
    return kind, positional, _parse_params(spec, items)


#: a bot's own seed (``random:seed=5``): what every bot's random numbers accept
SEED = Integer(0, 2**64 - 1, none=True)


def check_spec(spec: str) -> tuple[str, str | None, dict[str, Any]]:
    """:func:`parse_spec`, with every parameter checked against the bot's declared bounds
    (:mod:`agents.params`) and made a Python value; raises :class:`SpecError` naming the
    parameter, its value and what is allowed.  Builds nothing and imports no ``python:``
    module (a ``python:`` class checks its own parameters when :func:`make_agent` builds it)."""
    kind, positional, params = parse_spec(spec)
    try:
        if "seed" in params:
            params["seed"] = SEED.check("seed", params["seed"])
        if kind != "python":
            for name, bound in bounds_of(KNOWN_BOTS[kind].factory()).items():
                if name in params and isinstance(bound, Removed):
                    bound.check(name, params.pop(name))  # its old default is dropped, anything else refused
                elif name in params:
                    params[name] = bound.check(name, params[name])
    except ParamError as err:
        raise SpecError(f"bot spec {spec!r}: {err}") from err
    return kind, positional, params


def make_agent(spec: str, seed: int | None = None) -> Agent:
    """Build a bot from its spec string (see the module docstring).

    A ``python:`` spec imports its module (running the module's code) and builds the class;
    anything they raise is a :class:`SpecError` naming the spec."""
    kind, positional, params = check_spec(spec)
    if kind == "python":
        assert positional is not None
        module_name, cls_name = positional.split(":", 1)
        try:
            module = importlib.import_module(module_name)
        except Exception as err:  # a missing module, or its own code failing as it runs
            raise SpecError(
                f"bot spec {spec!r}: cannot import module {module_name!r} ({type(err).__name__}: {err})"
            ) from err
        cls = getattr(module, cls_name, None)
        if not (inspect.isclass(cls) and issubclass(cls, Agent)):
            raise SpecError(f"bot spec {spec!r}: {module_name}.{cls_name} is not an agents.base.Agent subclass")
        return _construct(spec, cls, params, seed, allow_any=True)
    if kind == "rllib" and positional is None:
        raise SpecError(f"bot spec {spec!r}: an rllib bot needs the checkpoint path, e.g. rllib:runs/rllib")
    if kind == "guided" and positional is None:
        raise SpecError(f"bot spec {spec!r}: a guided search needs the network's model, e.g. guided:runs/exit/best.zip")
    cls = KNOWN_BOTS[kind].factory()
    if kind in ("ppo", "rllib", "guided", "scorer") and positional is not None:
        params = {"path": positional, **params}
    return _construct(spec, cls, params, seed)


def _construct(spec: str, cls: type[Agent], params: dict[str, Any], seed: int | None, allow_any: bool = False) -> Agent:
    sig = inspect.signature(cls.__init__)
    accepted = {
        n for n, p in sig.parameters.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    unknown = sorted(set(params) - accepted - {"seed"})
    if unknown and not (allow_any and takes_kwargs):
        known = sorted(accepted - {"seed"})
        raise SpecError(
            f"bot spec {spec!r}: unknown parameter(s) {unknown}; {cls.__name__} accepts {known}\n"
            f"known bots:\n{describe_bots()}"
        )
    if "seed" in accepted and "seed" not in params:
        params = {**params, "seed": seed}
    try:
        agent = cls(**params)
    except Exception as err:  # a bad value, a missing file; or, for a python: class, any failure of its own
        if isinstance(err, ImportError) and not allow_any:
            raise  # a missing extra (numba, torch): the error names what to install
        text = str(err) if isinstance(err, (TypeError, ValueError)) else f"{type(err).__name__}: {err}"
        raise SpecError(f"bot spec {spec!r}: {text}") from err
    if not getattr(agent, "spec", None):
        agent.spec = spec  # type: ignore[attr-defined]
    return agent


# --------------------------------------------------------------------------- specs read from files


def runs_code(spec: Any) -> bool:
    """Whether building ``spec`` imports a Python module, running its code (a ``python:`` spec;
    a pool entry ``python:...@WEIGHT`` too).  Every other kind reads data only."""
    return isinstance(spec, str) and spec_kind(spec) == "python"


def module_in_folder(module: str, folder: str | Path) -> Path | None:
    """Where importing ``module`` (``a.b.c``) would find it or one of its packages inside
    ``folder`` on ``sys.path`` (as ``runs.NAME.payload`` finds ``runs/NAME/payload.py`` from the
    repository root), or None.  Imports nothing."""
    inside = Path(folder).resolve()
    parts = module.split(".")
    suffixes = ("", *importlib.machinery.all_suffixes())
    for entry in sys.path:
        base = Path(entry or ".")
        for depth in range(1, len(parts) + 1):
            stem = base.joinpath(*parts[:depth])
            for suffix in suffixes:
                candidate = stem.with_name(stem.name + suffix)
                try:
                    if candidate.exists() and candidate.resolve().is_relative_to(inside):
                        return candidate
                except (OSError, ValueError):
                    continue
    return None


def refuse_code(specs: Iterable[tuple[str, Any]], source: str | Path, trust_code: bool, folder: str | Path) -> None:
    """Refuse the ``python:`` specs of ``specs`` (``(field, spec)`` pairs read from the file
    ``source``): they would import and run a module, which a file may not ask for unless the
    user passes ``--trust-code``.  Even then a module found inside ``folder`` (the run folder,
    which holds data) is refused.  Raises :class:`SpecError` naming the field and the spec;
    imports nothing."""
    for field_name, spec in specs:
        if not runs_code(spec):
            continue
        if not trust_code:
            raise SpecError(
                f"{source}: {field_name} holds the bot spec {spec!r}, which imports and runs a Python module; "
                "specs read from a file never run code unless you pass --trust-code (only for a file you trust)"
            )
        module = spec.strip().partition(":")[2].partition(":")[0]
        found = module_in_folder(module, folder)
        if found is not None:
            raise SpecError(
                f"{source}: {field_name} holds the bot spec {spec!r}, whose module would be imported from "
                f"{found}, inside the run folder {folder}: a run folder holds data, never code that is run "
                "(put the module elsewhere on the Python path)"
            )
