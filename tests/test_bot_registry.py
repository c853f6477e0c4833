"""The bot registry: bots declared on their classes (``@bot``), found from the sources without importing them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agents import registry
from agents.base import Agent
from agents.catalog import BotDeclarationError, bot, discover
from agents.registry import KNOWN_BOTS, BotTable, SpecError, describe_bots, make_agent
from conquian_arena.match import deal_for_seed

#: the shipped declarations, read from the sources as the registry reads them
DECLARED = discover(Path(registry.__file__).parent, "agents")


def expected_bot_list() -> list[str]:
    """The bot list as the declarations give it: the shipped order, then other kinds, ``python``, the aliases."""
    rank = {kind: i for i, kind in enumerate(registry.SHIPPED_ORDER)}
    lines = []
    for d in [*sorted(DECLARED, key=lambda d: rank.get(d.kind, len(rank))), None]:
        kind, info = ("python", registry.PYTHON) if d is None else (d.kind, d.info())
        lines.append(f"  {kind + (':' + info.positional if info.positional else ''):<34} {info.summary}")
        lines += [f"      {name}={text}" for name, text in info.params.items()]
    for d in DECLARED:
        for alias in d.aliases:
            lines.append(f"  {alias + (':' + d.positional if d.positional else ''):<34} {d.summary}")
            lines += [f"      {name}={text}" for name, text in d.params.items()]
    return lines


def test_the_bot_list_shows_every_declared_kind_with_its_texts():
    assert DECLARED and describe_bots().splitlines() == expected_bot_list()
    assert [k for k in registry.SHIPPED_ORDER if k not in KNOWN_BOTS] == []  # the order names no kind that is gone


def test_every_kind_builds_its_declared_class_and_keeps_its_fields():
    kinds = [d.kind for d in DECLARED]
    assert len(kinds) == len(set(kinds)) and "python" not in kinds
    assert set(KNOWN_BOTS) == {*kinds, "python", *(a for d in DECLARED for a in d.aliases)}
    for d in DECLARED:
        info = KNOWN_BOTS[d.kind]
        assert (info.summary, info.params, info.positional) == (d.summary, d.params, d.positional)
        assert all(KNOWN_BOTS[alias] is info for alias in d.aliases)
        try:
            cls = info.factory()
        except ImportError:  # an optional extra (torch, ray) missing here
            continue
        assert (cls.__module__, cls.__name__) == (d.module, d.class_name) and issubclass(cls, Agent)
    assert KNOWN_BOTS["python"].factory() is Agent


# --------------------------------------------------------------------------- bots declared on their classes

MINE = """
from agents.base import Agent
from agents.catalog import bot

DEPTH = 2.0


@bot(
    "mine",
    "looks DEPTH moves ahead",
    params={"depth": "how far it looks", "name_": "what it calls itself", "hint": ("auto", "a hint")},
    positional="PATH",
    needs="a mine bot needs its book, e.g. mine:book.txt",
    aliases=("mine2",),
)
class MyAgent(Agent):
    def __init__(self, path=None, depth: float = DEPTH, name_: str = "me", hint=object(), seed=None):
        self.path, self.depth, self.seed = path, depth, seed

    def act(self, observation, action_mask, view=None):
        return int(action_mask.nonzero()[0][0])
"""


@pytest.fixture
def my_bots(tmp_path, monkeypatch):
    """A package ``mybots`` on sys.path holding one decorated bot, and the registry of its folder."""
    package = tmp_path / "mybots"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mine.py").write_text(MINE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield BotTable(package, "mybots")
    for name in ("mybots", "mybots.mine"):
        sys.modules.pop(name, None)


def test_a_decorated_bot_is_found_without_importing_its_module(my_bots):
    assert list(my_bots) == ["mine", "python", "mine2"]
    assert "mybots.mine" not in sys.modules  # read from the source, not imported
    info = my_bots["mine"]
    assert info.summary == "looks DEPTH moves ahead" and info.positional == "PATH"
    assert info.params == {"depth": "2, how far it looks", "name_": "me, what it calls itself", "hint": "auto, a hint"}
    assert my_bots["mine2"] is info
    assert "mybots.mine" not in sys.modules
    cls = info.factory()  # building one imports it
    assert "mybots.mine" in sys.modules and cls.__name__ == "MyAgent" and issubclass(cls, Agent)
    assert cls.bot_declaration == my_bots.declarations["mine"]  # the decorator reads the same texts


def test_a_bot_subclassing_a_bot_of_its_file_takes_its_declared_parameters(tmp_path, monkeypatch):
    """The parent's parameters first, in their order; the child words one anew and adds its own."""
    package = tmp_path / "kinbots"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kin.py").write_text(
        "from agents.base import Agent\nfrom agents.catalog import bot\n\n"
        "@bot('parent', 'the parent', params={'a': 'first', 'b': 'second'})\n"
        "class Parent(Agent):\n    def __init__(self, a=1, b=2, seed=None): ...\n\n"
        "@bot('child', 'the child', params={'b': 'second, anew', 'c': 'third'})\n"
        "class Child(Parent):\n    def __init__(self, a=1, b=3, c=4, seed=None): ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        table = BotTable(package, "kinbots")
        assert table["parent"].params == {"a": "1, first", "b": "2, second"}
        assert table["child"].params == {"a": "1, first", "b": "3, second, anew", "c": "4, third"}
        child = table["child"].factory()
        assert child.bot_declaration == table.declarations["child"]  # the decorator reads the same texts
    finally:
        for name in ("kinbots", "kinbots.kin"):
            sys.modules.pop(name, None)


def test_a_decorated_bot_is_built_from_its_spec(my_bots, monkeypatch):
    monkeypatch.setattr(registry, "KNOWN_BOTS", my_bots)
    agent = make_agent("mine:book.txt,depth=3", seed=4)
    assert (agent.path, agent.depth, agent.seed) == ("book.txt", 3, 4)
    with pytest.raises(SpecError, match="a mine bot needs its book"):
        make_agent("mine:depth=3")
    with pytest.raises(SpecError, match="unknown parameter"):
        make_agent("mine2:book.txt,width=3")


def test_the_shipped_registry_imports_no_bot_module_torch_or_numba():
    code = (
        "import sys, agents.registry as r; text = r.describe_bots(); assert 'pimc' in r.KNOWN_BOTS; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'torch', 'numba', 'ray')))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root)},
    )
    assert out.stdout.split() == [
        "['agents',",
        "'agents.base',",
        "'agents.catalog',",
        "'agents.params',",
        "'agents.registry']",
    ]


def test_bots_are_found_in_sub_packages_but_not_in_plain_folders(tmp_path):
    package = tmp_path / "mybots"
    (package / "family").mkdir(parents=True)
    (package / "plain").mkdir()  # no __init__.py: not a package, so nothing in it is a bot
    (package / "__init__.py").write_text("")
    (package / "family" / "__init__.py").write_text("")
    (package / "family" / "mine.py").write_text(MINE)
    (package / "plain" / "mine.py").write_text(MINE.replace('"mine"', '"plain"'))
    found = discover(package, "mybots")
    assert [(d.kind, d.module) for d in found] == [("mine", "mybots.family.mine")]


def test_a_family_package_names_its_bots_without_importing_the_others():
    code = (
        "import sys; from agents.search import ISMCTSAgent; from agents.search.ismcts import ISMCTSAgent as A; "
        "assert ISMCTSAgent is A; print(sorted(m for m in sys.modules if m.startswith('agents.search')))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": str(root)},
    )
    # the frame the searches share, not the compiled search
    assert out.stdout.split() == ["['agents.search',", "'agents.search.frame',", "'agents.search.ismcts']"]
    from agents.greedy import GreedyAgent
    from agents.scorer import ScorerAgent

    assert (GreedyAgent.bot_declaration.kind, ScorerAgent.bot_declaration.kind) == ("greedy", "scorer")


FAMILIES = ("greedy", "networks", "scorer", "search")


def test_importing_the_families_imports_none_of_their_modules():
    code = (
        f"import sys; import {', '.join('agents.' + f for f in FAMILIES)}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'torch', 'numba', 'ray')))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
        env={"PYTHONPATH": str(root)},
    )  # fmt: skip
    loaded = ast.literal_eval(out.stdout)
    assert loaded == sorted(["agents", "agents.base", "agents.catalog", "agents.lazy", "agents.params",
                             "agents.registry", *(f"agents.{f}" for f in FAMILIES)])  # fmt: skip


@pytest.mark.parametrize(
    ("family", "name", "home"),
    [("greedy", "GreedyAgent", "greedy"), ("networks", "RLlibAgent", "rllib_bot"), ("scorer", "load_scorer", "scorer"),
     ("search", "ISMCTSAgent", "ismcts")],
)  # fmt: skip
def test_a_family_lists_its_names_and_refuses_others_naming_them(family, name, home):
    import importlib

    package = importlib.import_module(f"agents.{family}")
    assert name in dir(package)
    if family != "networks":  # the RLlib bot's module needs ray
        assert getattr(package, name) is getattr(importlib.import_module(f"agents.{family}.{home}"), name)
    with pytest.raises(AttributeError, match=rf"module 'agents\.{family}' has no attribute 'Nope' \(it has: .*{name}"):
        package.Nope  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'Nope'"):
        from agents.search import Nope  # noqa: F401


def test_every_shipped_declaration_matches_its_class_as_imported():
    for declaration in discover(Path(registry.__file__).parent, "agents"):
        cls = KNOWN_BOTS[declaration.kind].factory()
        assert cls.bot_declaration == declaration, declaration.kind


def test_a_declared_parameter_the_constructor_does_not_take_is_refused(tmp_path):
    with pytest.raises(
        BotDeclarationError,
        match=r"@bot\('typo'\) on .*Typo: declared parameter\(s\) \['dept'\] that "
        r"__init__ does not take; it takes \['depth', 'seed'\]",
    ):

        @bot("typo", "a typo", params={"dept": "how far"})
        class Typo(Agent):
            def __init__(self, depth: int = 2, seed=None): ...

    (tmp_path / "typo.py").write_text(MINE.replace('"depth": "how far it looks"', '"dept": "how far it looks"'))
    with pytest.raises(
        BotDeclarationError, match=r"typo.py:\d+: @bot\('mine'\) on MyAgent: declared parameter\(s\) \['dept'\]"
    ):
        discover(tmp_path, "somewhere")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            ('"hint": ("auto", "a hint")', '"hint": "a hint"'),
            "parameter 'hint': its default 'object()' is not a literal",
        ),
        (('"looks DEPTH moves ahead"', '"looks " + "ahead"'), "summary is \"'looks ' + 'ahead'\", not a literal"),
        (("def __init__(self, path", "def setup(self, path"), "the class must define __init__ itself"),
        (('"mine",\n    "looks', '"Mine",\n    "looks'), "the kind must be a lower-case name"),
        (
            ('aliases=("mine2",)', 'aliases=("python",)'),
            "bot kind 'python' of somewhere.bad.MyAgent is already the python",
        ),
    ],
)
def test_a_declaration_the_registry_cannot_read_is_refused_by_name(tmp_path, change, words):
    (tmp_path / "bad.py").write_text(MINE.replace(*change))
    with pytest.raises(BotDeclarationError, match=re.escape(words)):
        BotTable(tmp_path, "somewhere").load()


def test_two_classes_claiming_one_kind_are_refused(tmp_path):
    (tmp_path / "a.py").write_text(MINE)
    (tmp_path / "b.py").write_text(MINE.replace('"mine2"', '"other"'))
    with pytest.raises(
        BotDeclarationError, match="bot kind 'mine' of somewhere.b.MyAgent is already somewhere.a.MyAgent's"
    ):
        BotTable(tmp_path, "somewhere").load()


def test_the_bot_list_is_the_table(my_bots, monkeypatch):
    monkeypatch.setattr(registry, "KNOWN_BOTS", my_bots)
    assert describe_bots().splitlines()[:4] == [
        f"  {'mine:PATH':<34} looks DEPTH moves ahead",
        "      depth=2, how far it looks",
        "      name_=me, what it calls itself",
        "      hint=auto, a hint",
    ]


# --------------------------------------------------------------------------- batched forms, from the same registry

BATCHED = """
import numpy as np
from agents.base import Agent
from agents.catalog import bot


class FirstLegal:
    def __init__(self, seed):
        self.seed = seed

    def act_batch(self, games, rows):
        return np.array([games.get_game(int(r)).legal_actions()[0] for r in rows], dtype=np.int64)


@bot("first", "the first legal action", params={"width": "unused"})
class First(Agent):
    def __init__(self, width: int = 1, seed=None):
        self.width = width

    def act(self, observation, action_mask, view=None):
        return int(action_mask.nonzero()[0][0])

    @classmethod
    def batched(cls, path, params, seed):
        return None if params else FirstLegal(seed)
"""


def test_a_bot_declares_its_batched_form_where_it_is_registered(tmp_path, monkeypatch):
    from agents.batched import PerGameOpponent, make_batch_opponent
    from conquian_arena.batch import play_batch
    from conquian_env.vector import deal_permutation

    package = tmp_path / "batchbots"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text(BATCHED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "KNOWN_BOTS", BotTable(package, "batchbots"))
    try:
        made = make_batch_opponent("first", seed=7)
        assert type(made).__name__ == "FirstLegal" and made.seed == 7  # the class's own form, seeded
        assert isinstance(make_batch_opponent("first:width=2", seed=7), PerGameOpponent)  # it declined: game by game
        per_game = PerGameOpponent("first:width=2", seed=7)
        deals = np.stack([deal_permutation(*deal_for_seed(s)) for s in range(4)])
        seats = np.array([0, 1, 0, 1])
        batched_first = play_batch(made, per_game, deals, seats)
        per_game_first = play_batch(per_game, made, deals, seats)
        assert batched_first[1].tolist() == per_game_first[1].tolist()  # the same moves either way
    finally:
        for name in ("batchbots", "batchbots.first"):
            sys.modules.pop(name, None)


def test_every_shipped_kind_gets_its_declared_batched_form_or_plays_game_by_game():
    from agents.batched import PerGameOpponent, make_batch_opponent

    for d in DECLARED:
        if d.positional and not d.positional.startswith("["):
            continue  # needs a file
        try:
            cls = KNOWN_BOTS[d.kind].factory()
            made = make_batch_opponent(d.kind, seed=3)
        except ImportError:  # an optional extra missing here
            continue
        own = cls.batched(None, {}, 3)
        assert isinstance(made, PerGameOpponent) if own is None else type(made) is type(own), d.kind
    assert type(make_batch_opponent("greedy")).__name__ == "BatchGreedy"
    assert type(make_batch_opponent("random:seed=4")).__name__ == "BatchRandom"
    with pytest.raises(SpecError, match="unknown parameter"):
        make_batch_opponent("random:colour=red")  # declined by the batched form, refused game by game
