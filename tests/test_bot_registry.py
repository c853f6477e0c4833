# ruff: noqa: E501  (the pinned text has the long lines it prints)
"""The bot registry: bots declared on their classes (``@bot``), found from the sources without importing them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from agents import registry
from agents.base import Agent
from agents.catalog import BotDeclarationError, bot, discover
from agents.registry import KNOWN_BOTS, BotTable, SpecError, describe_bots, make_agent

#: describe_bots() as it was before the bots declared themselves (pinned: the text must not change),
#: less the search bots' take_options line (the knob was removed: docs/benchmarks.md)
DESCRIBE_BOTS = (
    "  random                             uniform over legal actions\n"
    "  greedy                             rule-based: takes what improves its hand, goes out when it can, discards the least useful card\n"
    "  ismcts                             compiled search (needs numba): paired greedy playouts of every action on plausible deals, racing\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play\n"
    "  search                             the compiled search with deals drawn from the belief model of the opponent's hand (needs numba)\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=1, belief deals drawn per determinization, the most plausible kept (1: the belief alone)\n"
    "      belief=none, a belief model file (none: the shipped agents/data/conquian_belief.npz)\n"
    "      uniform=false, uniform deals instead of the belief's (with tries > 1: the plausibility filter)\n"
    "      inner=0, deals of a second ply (the searcher's first playout decision searched on its re-deals)\n"
    "      leaf=none, greedy steps of a playout before the leaf value is read instead (none: played out)\n"
    "      value=none, a leaf value model file (conquian_train.value fit), read at the leaf (needs leaf)\n"
    "  guided:PATH.zip                    the compiled search guided by a network: its prior (only the most likely actions race) and playout policy\n"
    "      keep=3, legal actions (by the policy's ranking) that are searched (0: all)\n"
    "      steps=0, the searching player's next decisions in each playout that the network makes (a scorer)\n"
    "      both=false, the network also makes the opponent's decisions in the playouts (steps counts both)\n"
    "      time=0.15, seconds per searched decision at most\n"
    "      iterations=none, playouts per decision instead of time\n"
    "      z=3, standard errors behind the leader at which an action leaves the race\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play\n"
    "  ismcts-py                          the Python information-set Monte Carlo tree search (readable reference; slow)\n"
    "      iterations=500, simulations per decision\n"
    "      time=none, seconds per decision (overrides iterations when given)\n"
    "      c=0.7, UCB exploration constant (scores in [0, 1])\n"
    "      infer=true, prefer deals that explain the opponent's refusals and discards\n"
    "  rollout                            flat Monte Carlo: every legal action scored by paired greedy rollouts on sampled deals\n"
    "      samples=32, determinizations per decision (each action is rolled out on each)\n"
    "      margin=0, leave the greedy choice only for a paired gain of this many standard errors\n"
    "      infer=true, prefer deals that explain the opponent's refusals and discards\n"
    "      batch=false, run the rollouts together on the batched engine (needs numba; same games, faster)\n"
    "  ppo:[PATH.zip]                     a MaskablePPO model (sb3-contrib .zip from train.py); no path: the shipped model\n"
    "      deterministic=true, argmax instead of sampling\n"
    "  scorer:[PATH.npz]                  the action scorer alone (a network from train.py exit scoring each legal action); no path: the shipped one\n"
    "  rllib:PATH                         an RLlib policy (a checkpoint of conquian_train.rllib / examples/rllib_selfplay.py)\n"
    "      module_id=shared, the policy in a multi-policy checkpoint\n"
    "      deterministic=true, argmax instead of sampling\n"
    "  python:package.module:ClassName    your own Agent subclass\n"
    "      any=keyword arguments passed to the class\n"
    "  pimc                               compiled search (needs numba): paired greedy playouts of every action on plausible deals, racing\n"
    "      time=0.15, seconds per searched decision at most (the race ends most decisions sooner)\n"
    "      iterations=none, playouts per decision instead of time (reproducible with a seed)\n"
    "      z=3, standard errors behind the leader at which an action leaves the race (0: never)\n"
    "      tries=10, deals drawn per determinization to find one explaining the opponent's play"
)

#: the class each kind builds (ppo and rllib need torch / ray: checked by name only)
CLASSES = {
    "random": "agents.base.RandomAgent",
    "greedy": "agents.greedy.GreedyAgent",
    "ismcts": "agents.search.SearchAgent",
    "search": "agents.search.BeliefSearchAgent",
    "guided": "agents.search.GuidedSearchAgent",
    "ismcts-py": "agents.ismcts.ISMCTSAgent",
    "rollout": "agents.rollout.RolloutAgent",
    "scorer": "agents.scorer.ScorerAgent",
    "python": "agents.base.Agent",
    "pimc": "agents.search.SearchAgent",
}

POSITIONAL = {
    "random": None,
    "greedy": None,
    "ismcts": None,
    "search": None,
    "guided": "PATH.zip",
    "ismcts-py": None,
    "rollout": None,
    "ppo": "[PATH.zip]",
    "scorer": "[PATH.npz]",
    "rllib": "PATH",
    "python": "package.module:ClassName",
    "pimc": None,
}


def test_describe_bots_is_unchanged():
    assert describe_bots() == DESCRIBE_BOTS


def test_every_kind_builds_the_same_class_and_keeps_its_fields():
    assert list(KNOWN_BOTS) == list(POSITIONAL)
    assert {k: v.positional for k, v in KNOWN_BOTS.items()} == POSITIONAL
    for kind, name in CLASSES.items():
        cls = KNOWN_BOTS[kind].factory()
        assert f"{cls.__module__}.{cls.__name__}" == name, kind
    assert KNOWN_BOTS["pimc"] is KNOWN_BOTS["ismcts"]


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
