"""Build bots from spec strings: ``random``, ``greedy``, ``pimc:iterations=400``,
``ppo`` (the shipped model), ``ppo:PATH.zip``, ``scorer`` (the shipped action scorer),
``scorer:PATH.npz``, ``exec:PATH`` (a program in any language, :mod:`agents.program`),
``python:package.module:ClassName``.

Grammar: ``NAME`` or ``NAME:key=value,key=value``.  Some kinds take a positional
argument first: ``ppo:PATH[,key=value...]`` (a saved MaskablePPO model; ``scorer``
and ``rllib`` take a path the same way) and
``python:MODULE:CLASS[,key=value...]`` (any :class:`~agents.base.Agent` subclass, built
with the keyword arguments given).  Values are parsed as int, float, bool
(``true``/``false``) or left as text.  A bad spec raises ``ValueError`` that lists the
known bots and their parameters.

The kinds are the classes declared with :func:`agents.catalog.bot` in the ``agents``
sources, found by reading the sources (:data:`KNOWN_BOTS`, built on first use) so that no bot
module is imported until one of its specs is built (torch only for ``ppo``, numba only for
the compiled searches); see docs/bots.md, "Writing your own bot".

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
from collections.abc import Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

from conquian_env.extras import missing

from .base import Agent
from .catalog import BotDeclarationError, BotInfo, Declaration, discover
from .params import Integer, ParamError, bounds_of

#: the order in which the bot list shows the shipped kinds; other discovered kinds follow, then ``python``
SHIPPED_ORDER = ("random", "greedy", "pimc", "search", "ismcts-py", "rollout", "ppo", "scorer", "rllib", "exec")

#: ``python:package.module:ClassName``: no declared bot, any Agent subclass of the user's
PYTHON = BotInfo(
    lambda: Agent,
    "your own Agent subclass",
    {"any": "keyword arguments passed to the class"},
    positional="package.module:ClassName",
)


class BotTable(MutableMapping[str, BotInfo]):
    """The known bot kinds, built on first use from the ``@bot`` classes of the ``agents`` sources
    (:func:`agents.catalog.discover`: read with ``ast``, no bot module imported) plus ``python``
    and any aliases a declaration gives."""

    def __init__(self, folder: Path, package: str):
        self.folder, self.package = folder, package
        self.table: dict[str, BotInfo] | None = None
        self.declarations: dict[str, Declaration] = {}

    def load(self) -> dict[str, BotInfo]:
        if self.table is None:
            found = discover(self.folder, self.package)
            rank = {kind: i for i, kind in enumerate(SHIPPED_ORDER)}
            found.sort(key=lambda d: rank.get(d.kind, len(rank)))  # stable: new kinds keep their file order
            declarations: dict[str, Declaration] = {}
            for declaration in found:
                for kind in (declaration.kind, *declaration.aliases):
                    if kind in declarations or kind == "python":
                        other = declarations.get(kind)
                        by = f"{other.module}.{other.class_name}" if other else "the python: spec"
                        raise BotDeclarationError(
                            f"bot kind {kind!r} of {declaration.module}.{declaration.class_name} is already {by}'s"
                        )
                    declarations[kind] = declaration
            table = {d.kind: d.info() for d in found}
            table["python"] = PYTHON
            for declaration in found:
                for alias in declaration.aliases:
                    table[alias] = table[declaration.kind]
            self.declarations, self.table = declarations, table
        return self.table

    def __getitem__(self, kind: str) -> BotInfo:
        return self.load()[kind]

    def __setitem__(self, kind: str, info: BotInfo) -> None:
        self.load()[kind] = info

    def __delitem__(self, kind: str) -> None:
        del self.load()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self.load())

    def __len__(self) -> int:
        return len(self.load())

    def __contains__(self, kind: object) -> bool:
        return kind in self.load()

    def __repr__(self) -> str:
        return f"BotTable({self.load()!r})"


#: kind -> :class:`BotInfo`
KNOWN_BOTS = BotTable(Path(__file__).resolve().parent, __package__ or "agents")


def declaration_of(kind: str) -> Declaration | None:
    """The ``@bot`` declaration behind a kind (None for ``python`` or a kind added by hand)."""
    KNOWN_BOTS.load()
    return KNOWN_BOTS.declarations.get(kind)


#: the kinds with a spec form of their own: ``python:MODULE:CLASS[,...]`` and ``noisy:EPS:SPEC`` (the
#: rest of the spec is another bot's whole spec)
OWN_FORMS = ("python", "noisy")


def takes_path(kind: str) -> bool:
    """Whether a kind's spec starts with a path (``ppo:PATH.zip``); :data:`OWN_FORMS` have their own."""
    return kind not in OWN_FORMS and KNOWN_BOTS[kind].positional is not None


def played_spec(spec: Any) -> Any:
    """The spec of the bot that ``spec`` plays through: ``greedy`` for ``noisy:0.2:greedy`` (through
    any number of ``noisy:``), else ``spec`` itself."""
    while isinstance(spec, str) and spec_kind(spec) == "noisy" and spec.count(":") >= 2:
        spec = spec.strip().split(":", 2)[2]
    return spec


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
    """The bot kind a spec names (``pimc`` for ``pimc:time=1``), as :func:`parse_spec` reads it."""
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
    elif kind == "noisy":  # noisy:EPS:SPEC
        eps, sep, positional = rest.partition(":")
        if not sep or not eps.strip() or not positional.strip():
            raise SpecError(f"bot spec {spec!r}: expected noisy:EPS:SPEC, e.g. noisy:0.2:greedy")
        items = [f"eps={eps.strip()}"]
    elif takes_path(kind):
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
    if kind == "noisy":
        check_spec(positional)  # the bot it plays
    try:
        if "seed" in params:
            params["seed"] = SEED.check("seed", params["seed"])
        if kind != "python":
            for name, bound in bounds_of(bot_class(spec, kind)).items():
                if name in params:
                    params[name] = bound.check(name, params[name])
    except ParamError as err:
        raise SpecError(f"bot spec {spec!r}: {err}") from err
    return kind, positional, params


def bot_class(spec: str, kind: str) -> type:
    """The class of ``kind`` (imported now), or the :class:`~conquian_env.extras.MissingExtraError` naming ``spec``."""
    try:
        return KNOWN_BOTS[kind].factory()
    except ImportError as err:
        raise missing(err, f"bot spec {spec!r}", typed=True) from None


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
    info = KNOWN_BOTS[kind]
    if positional is None and info.positional and not info.positional.startswith("["):
        declared = declaration_of(kind)
        needs = declared.needs if declared and declared.needs else f"a {kind} bot needs {info.positional}"
        raise SpecError(f"bot spec {spec!r}: {needs}")
    cls = bot_class(spec, kind)
    if takes_path(kind) and positional is not None:
        params = {"path": positional, **params}
    elif kind == "noisy":
        params = {"base": positional, **params}
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
        if isinstance(err, ImportError) and not allow_any:  # a missing extra: one line naming the spec
            raise missing(err, f"bot spec {spec!r}", typed=True) from None
        text = str(err) if isinstance(err, (TypeError, ValueError)) else f"{type(err).__name__}: {err}"
        raise SpecError(f"bot spec {spec!r}: {text}") from err
    if not getattr(agent, "spec", None):
        agent.spec = spec  # type: ignore[attr-defined]
    return agent


# --------------------------------------------------------------------------- specs read from files


#: the kinds whose spec runs code of the user's: ``python:`` imports a module, ``exec:`` starts a program
RUNS_CODE = ("python", "exec")


def runs_code(spec: Any) -> bool:
    """Whether playing ``spec`` runs code of the user's: a ``python:`` spec imports a module, an
    ``exec:`` spec starts a program (a pool entry ``python:...@WEIGHT`` too).  Every other kind
    reads data only."""
    spec = played_spec(spec)
    return isinstance(spec, str) and spec_kind(spec) in RUNS_CODE


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
    """Refuse the ``python:`` and ``exec:`` specs of ``specs`` (``(field, spec)`` pairs read from
    the file ``source``): they would import and run a module or start a program, which a file may
    not ask for unless the user passes ``--trust-code``.  Even then a module found, or a program
    lying, inside ``folder`` (the run folder, which holds data) is refused.  Raises
    :class:`SpecError` naming the field and the spec; imports and starts nothing."""
    for field_name, given in specs:
        if not runs_code(given):
            continue
        spec = played_spec(given)  # the spec that runs code, noisy: or not
        what = "starts a program" if spec_kind(spec) == "exec" else "imports and runs a Python module"
        if not trust_code:
            raise SpecError(
                f"{source}: {field_name} holds the bot spec {given!r}, which {what}; "
                "specs read from a file never run code unless you pass --trust-code (only for a file you trust)"
            )
        if spec_kind(spec) == "exec":
            program = Path(spec.strip().partition(":")[2].partition(",")[0]).expanduser()
            try:
                inside = program.resolve().is_relative_to(Path(folder).resolve())
            except (OSError, ValueError):
                inside = False
            if inside:
                raise SpecError(
                    f"{source}: {field_name} holds the bot spec {given!r}, whose program lies inside the run "
                    f"folder {folder}: a run folder holds data, never code that is run (put the program elsewhere)"
                )
            continue
        module = spec.strip().partition(":")[2].partition(":")[0]
        found = module_in_folder(module, folder)
        if found is not None:
            raise SpecError(
                f"{source}: {field_name} holds the bot spec {spec!r}, whose module would be imported from "
                f"{found}, inside the run folder {folder}: a run folder holds data, never code that is run "
                "(put the module elsewhere on the Python path)"
            )
