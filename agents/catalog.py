"""Bots declared on their own classes: the :func:`bot` decorator, and :func:`discover`, which
finds the decorated classes by reading the sources of a package (``ast``), without importing them.

A new bot is one file::

    from agents.base import Agent
    from agents.catalog import bot

    @bot("mine", "what it does, in one line", params={"depth": "how far it looks"})
    class MyAgent(Agent):
        def __init__(self, depth: int = 2, seed: int | None = None): ...

The registry (:mod:`agents.registry`) lists it as ``mine`` (``depth=2, how far it looks``: the
default is read from the signature) and imports its module only when a ``mine`` spec is built,
so that listing the bots imports neither torch nor numba.  The decorator's arguments must be
literals, and each default of a declared parameter a literal or a module-level constant of the
same file (``DEFAULT_Z = 3.0``); a default computed elsewhere is declared with its text,
``params={"time": ("0.15", "seconds per decision")}``.  Both the decorator (when the module is
imported) and :func:`discover` (when the registry is built) refuse a declared parameter that the
constructor does not take, naming the class and the parameters it does take.  A bot that subclasses
another bot of the same file takes that bot's declared parameters, first and in their order; its own
``params`` add more or word one anew.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: a declared parameter: its meaning (the default read from ``__init__``), or ``(default text, meaning)``
Param = str | tuple[str, str]


@dataclass(frozen=True)
class BotInfo:
    """What the registry shows of a bot kind: ``factory()`` imports and returns the class."""

    factory: Callable[[], type]  # imported lazily: torch only for ppo, numba only for the searches
    summary: str
    params: dict[str, str]  # name -> "default, meaning"
    positional: str | None = None


class BotDeclarationError(TypeError):
    """A ``@bot`` declaration that does not match its class, or that cannot be read from its source."""


@dataclass(frozen=True)
class Declaration:
    """One ``@bot(...)`` as declared: the kind, its texts and where its class lives."""

    kind: str
    summary: str
    params: dict[str, str]  # name -> "default, meaning"
    positional: str | None
    aliases: tuple[str, ...]
    needs: str | None  # the error when a required positional argument is missing
    module: str
    class_name: str

    def info(self) -> BotInfo:
        return BotInfo(lambda: load_class(self.module, self.class_name), self.summary, self.params, self.positional)


class NotLiteral:
    """A default that is no literal (its source text), which only an explicit default text may stand for."""

    def __init__(self, source: str):
        self.source = source


NO_DEFAULT = NotLiteral("")


def default_text(value: Any) -> str:
    """A default as the bot list shows it: ``none``, ``true``/``false``, ``3`` for ``3.0``, text as it is."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float, str)):
        return str(value)
    raise BotDeclarationError(f"default {value!r} is not a number, flag, text or None")


def param_texts(where: str, params: Mapping[str, Param], defaults: Mapping[str, Any]) -> dict[str, str]:
    """``{name: "default, meaning"}`` for the declared ``params`` of a constructor whose parameters
    and defaults are ``defaults`` (a :class:`NotLiteral` for one that is not a literal or has none)."""
    if not isinstance(params, Mapping):
        raise BotDeclarationError(f"{where}: params must be a dict of name -> meaning, got {params!r}")
    unknown = [name for name in params if name not in defaults]
    if unknown:
        raise BotDeclarationError(
            f"{where}: declared parameter(s) {unknown} that __init__ does not take; it takes {sorted(defaults)}"
        )
    texts: dict[str, str] = {}
    for name, declared in params.items():
        if isinstance(declared, tuple) and len(declared) == 2 and all(isinstance(t, str) for t in declared):
            default, meaning = declared
        elif isinstance(declared, str):
            value = defaults[name]
            if isinstance(value, NotLiteral):
                found = f"its default {value.source!r} is not a literal" if value.source else "it has no default"
                raise BotDeclarationError(
                    f"{where}: parameter {name!r}: {found}; declare its text, {name!r}: ('DEFAULT', {declared!r})"
                )
            try:
                default = default_text(value)
            except BotDeclarationError as err:
                raise BotDeclarationError(f"{where}: parameter {name!r}: {err}") from None
            meaning = declared
        else:
            raise BotDeclarationError(
                f"{where}: parameter {name!r} is declared as {declared!r}; expected a meaning or (default, meaning)"
            )
        texts[name] = f"{default}, {meaning}"
    return texts


def check_declaration(where: str, kind: Any, summary: Any, positional: Any, aliases: Any, needs: Any) -> None:
    if not (isinstance(kind, str) and kind and kind == kind.lower() and ":" not in kind and "," not in kind):
        raise BotDeclarationError(f"{where}: the kind must be a lower-case name without ':' or ',', got {kind!r}")
    if not isinstance(summary, str) or not summary:
        raise BotDeclarationError(f"{where}: the summary must be a non-empty text, got {summary!r}")
    for label, value in (("positional", positional), ("needs", needs)):
        if value is not None and not isinstance(value, str):
            raise BotDeclarationError(f"{where}: {label} must be a text or None, got {value!r}")
    if not (isinstance(aliases, tuple) and all(isinstance(a, str) and a for a in aliases)):
        raise BotDeclarationError(f"{where}: aliases must be a tuple of names, got {aliases!r}")


def bot(
    kind: str,
    summary: str,
    params: Mapping[str, Param] | None = None,
    positional: str | None = None,
    aliases: tuple[str, ...] = (),
    needs: str | None = None,
) -> Callable[[type], type]:
    """Declare a class a bot of ``kind`` (see the module docstring).

    ``params``: the parameters a spec may set, in the order the bot list shows them, each with
    its meaning (its default is read from ``__init__``); ``positional``: the argument that comes
    first in a spec (``PATH``; in brackets when optional, ``[PATH.zip]``), passed as ``path``;
    ``aliases``: other kinds that build the same bot; ``needs``: the error when a required
    positional argument is missing.  Only literal arguments: the registry reads them from the source."""
    own = dict(params or {})

    def decorate(cls: type) -> type:
        where = f"@bot({kind!r}) on {cls.__qualname__}"
        check_declaration(where, kind, summary, positional, aliases, needs)
        bots = [k for k in cls.__mro__[1:] if "bot_params" in k.__dict__ and k.__module__ == cls.__module__]
        parent = bots[0] if bots else None
        params = {**(parent.bot_params if parent else {}), **own}  # a bot of the same file: its parameters first
        cls.bot_params = params  # type: ignore[attr-defined]
        signature = inspect.signature(cls.__init__)
        defaults = {
            name: NO_DEFAULT if p.default is p.empty else p.default
            for name, p in signature.parameters.items()
            if name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        }
        texts = param_texts(where, params, defaults)
        cls.bot_declaration = Declaration(  # type: ignore[attr-defined]
            kind, summary, texts, positional, tuple(aliases), needs, cls.__module__, cls.__qualname__
        )
        return cls

    return decorate


def load_class(module: str, class_name: str) -> type:
    """Import ``module`` and return its class ``class_name`` (the factory of a discovered bot)."""
    return getattr(importlib.import_module(module), class_name)


# --------------------------------------------------------------------------- reading the sources


def is_bot_call(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "bot") or (isinstance(func, ast.Attribute) and func.attr == "bot")


def module_constants(tree: ast.Module) -> dict[str, Any]:
    """The module-level ``NAME = literal`` assignments of a source (read, never run)."""
    constants: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        else:
            continue
        try:
            constants[target] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            constants.pop(target, None)
    return constants


def source_defaults(where: str, cls: ast.ClassDef, constants: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of the class's own ``__init__`` and their defaults, read from the source."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        raise BotDeclarationError(f"{where}: the class must define __init__ itself (its parameters are read from it)")
    args = init.args
    plain = [*args.posonlyargs, *args.args]
    padded: list[ast.expr | None] = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    pairs = [(a.arg, d) for a, d in zip(plain, padded, strict=True) if a not in args.posonlyargs]
    pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    defaults: dict[str, Any] = {}
    for name, node in pairs[1:] if pairs and pairs[0][0] == "self" else pairs:
        if node is None:
            defaults[name] = NO_DEFAULT
        elif isinstance(node, ast.Name) and node.id in constants:
            defaults[name] = constants[node.id]
        else:
            try:
                defaults[name] = ast.literal_eval(node)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                defaults[name] = NotLiteral(ast.unparse(node))
    return defaults


def literal(where: str, label: str, node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise BotDeclarationError(
            f"{where}: {label} is {ast.unparse(node)!r}, not a literal (the registry reads it without importing)"
        ) from None


def declarations_in(path: Path, module: str) -> list[Declaration]:
    """The ``@bot(...)`` classes of one source file, read with ``ast`` (nothing is imported or run)."""
    text = path.read_text(encoding="utf-8")
    if "@bot(" not in text and ".bot(" not in text:
        return []
    tree = ast.parse(text, filename=str(path))
    constants = module_constants(tree)
    found = []
    declared: dict[str, dict[str, Any]] = {}  # class name -> its parameters, a parent bot's included
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for call in filter(is_bot_call, cls.decorator_list):
            assert isinstance(call, ast.Call)
            where = f"{path.name}:{call.lineno}: @bot on {cls.name}"
            names = ("kind", "summary", "params", "positional", "aliases", "needs")
            if len(call.args) > len(names) or any(isinstance(a, ast.Starred) for a in call.args):
                raise BotDeclarationError(f"{where}: at most {len(names)} plain positional arguments")
            given = {n: literal(where, n, a) for n, a in zip(names, call.args, strict=False)}
            for keyword in call.keywords:
                if keyword.arg not in names or keyword.arg in given:
                    raise BotDeclarationError(f"{where}: unexpected or repeated argument {keyword.arg!r}")
                given[keyword.arg] = literal(where, keyword.arg, keyword.value)
            if "kind" not in given or "summary" not in given:
                raise BotDeclarationError(f"{where}: needs the kind and the summary")
            kind = given["kind"]
            where = f"{path.name}:{call.lineno}: @bot({kind!r}) on {cls.name}"
            aliases = given.get("aliases", ())
            aliases = tuple(aliases) if isinstance(aliases, list) else aliases
            check_declaration(where, kind, given["summary"], given.get("positional"), aliases, given.get("needs"))
            parent = next((b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in declared), None)
            params = declared[cls.name] = {**(declared[parent] if parent else {}), **(given.get("params") or {})}
            texts = param_texts(where, params, source_defaults(where, cls, constants))
            found.append(
                Declaration(
                    kind,
                    given["summary"],
                    texts,
                    given.get("positional"),
                    aliases,
                    given.get("needs"),
                    module,
                    cls.name,
                )
            )
    return found


def discover(folder: Path, package: str) -> list[Declaration]:
    """Every ``@bot`` class in the ``*.py`` files of ``folder`` (the package ``package``) and of
    its sub-packages (folders with an ``__init__.py``, at any depth), in the order of the file
    paths (the package's own files first, then each sub-package's) and then of the source;
    imports none of them."""
    folder = Path(folder)
    found: list[Declaration] = []
    for path in sorted(folder.glob("*.py")):
        module = package if path.stem == "__init__" else f"{package}.{path.stem}"
        found += declarations_in(path, module)
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        found += discover(sub, f"{package}.{sub.name}")
    return found
