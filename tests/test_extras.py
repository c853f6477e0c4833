"""A missing optional package is told the same way everywhere: one line naming what the user asked
for (the bot spec typed, the module imported, the command run), the package and its install line
(``conquian_env.extras``).  Each child process here cannot import the optional packages, as on a
plain install; ``.ci/extras.sh`` checks the same from the wheel in a fresh venv."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conquian_env.extras import PACKAGES, TORCH_INSTALL, MissingExtraError, missing

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = ",".join(PACKAGES)
PACKAGE_PREFIXES = ("conquian_env.", "agents.", "conquian_arena.", "conquian_train.")


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def names_an_install_line(text: str) -> bool:
    return "pip install 'conquian-env[" in text or TORCH_INSTALL in text


def test_every_bot_spec_without_its_extra_builds_or_fails_in_one_line_naming_the_spec(python_without):
    # before: `search` said a bare "No module named 'numba'", and `pimc` said the compiled search "(spec 'ismcts')"
    code = """
import json
from agents.registry import KNOWN_BOTS, SpecError, make_agent
from conquian_env.extras import MissingExtraError
out = {}
for kind, info in KNOWN_BOTS.items():
    if kind == "python":
        continue
    spec = kind if info.positional is None or info.positional.startswith("[") else f"{kind}:no-such-file"
    try:
        make_agent(spec, seed=0)
        out[spec] = None
    except MissingExtraError as err:
        out[spec] = str(err)
    except SpecError:  # got past every import to the file it needs (exec:no-such-file): no extra missing
        out[spec] = None
print(json.dumps(out))
"""
    run = python_without(OPTIONAL, code)
    assert run.returncode == 0, run.stderr
    told = json.loads(run.stdout)
    for spec, line in told.items():
        if line is not None:
            assert len(line.splitlines()) == 1 and line.startswith(f"bot spec {spec!r} needs "), line
            assert names_an_install_line(line), line
    expected = {
        "pimc": "conquian-env[fast]",
        "search": "conquian-env[fast]",
        "ppo": TORCH_INSTALL,
        "rllib:no-such-file": "conquian-env[rllib]",
    }
    for spec, install in expected.items():
        assert told[spec] is not None and install in told[spec], (spec, told[spec])
    assert told["greedy"] is None and told["random"] is None and told["scorer"] is None  # a plain install plays them


def test_every_module_imports_or_fails_in_one_line_naming_itself(python_without):
    # the compiled kernels (*kernels) are numba code through and through: the modules above them say it
    code = """
import importlib, json, pkgutil
from conquian_env.extras import MissingExtraError
out = {}
for package in ("conquian_env", "agents", "conquian_arena", "conquian_train"):
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if info.name.endswith("kernels"):
            continue
        try:
            importlib.import_module(info.name)
            out[info.name] = None
        except MissingExtraError as err:
            out[info.name] = str(err)
print(json.dumps(out))
"""
    run = python_without(OPTIONAL, code)
    assert run.returncode == 0, run.stderr  # any other error (a bare ModuleNotFoundError) fails here
    told = json.loads(run.stdout)
    for line in told.values():
        if line is not None:  # the module itself, or the one of ours it imports that needs the package
            assert len(line.splitlines()) == 1 and line.split()[0].startswith(PACKAGE_PREFIXES), line
            assert names_an_install_line(line), line
    for module in (
        "conquian_env.vector",
        "conquian_env.vector_env",
        "conquian_env.sb3",
        "conquian_env.integrations.rllib",
        "conquian_env.integrations.tianshou",
        "conquian_env.integrations.agilerl",
        "conquian_env.integrations.openspiel",
        "conquian_env.jax",
    ):
        assert told[module] is not None and told[module].startswith(f"{module} "), told[module]
    assert told["conquian_env.env"] is None and told["agents.greedy.greedy"] is None


def test_numba_missing_from_sys_modules_is_one_line_for_the_module_the_cli_and_gym_make():
    # sys.modules["numba"] = None: `import numba` fails, as it does without the package
    head = "import sys\nsys.modules['numba'] = None\n"
    run = run_python(head + "import conquian_env.vector")
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == (
        "conquian_env.extras.MissingExtraError: conquian_env.vector (the batched engine) needs numba, "
        "the 'fast' extra: pip install 'conquian-env[fast]'"
    ), run.stderr

    code = head + "from conquian_arena.tournament import main\nsys.exit(main(sys.argv[1:]))"
    run = run_python(code, "search", "greedy", "--games", "2", "--no-plot", "--out", "/nonexistent/never-made")
    assert run.returncode == 2
    assert (
        run.stderr.endswith(  # the prog is argv[0]: conquian-evaluate from the console script
            ": error: bot spec 'search' needs numba, the 'fast' extra: pip install 'conquian-env[fast]'\n"
        )
        and len(run.stderr.splitlines()) == 1
    ), run.stderr

    code = head + "import gymnasium, conquian_env\ngymnasium.make('conquian_env/Conquian-v0', opponent='pimc')"
    run = run_python(code)
    last = run.stderr.splitlines()[-1]
    assert last.startswith("conquian_env.extras.MissingExtraError: bot spec 'pimc' needs numba"), run.stderr
    assert "'ismcts'" not in last  # the spec typed, not the kind it is another name of


@pytest.mark.parametrize(
    ("blocked", "command", "argv", "told"),
    [
        ("flask", "conquian_arena.play:cli", ["--web"], "conquian-play --web (the browser front end) needs Flask"),
        (
            "ray",
            "conquian_arena.tournament:main",
            ["greedy", "random", "--ray", "local", "--no-plot", "--out", "/nonexistent/x"],
            "conquian-evaluate --ray needs Ray, the 'ray' extra: pip install 'conquian-env[ray]'",
        ),
        (
            "stable_baselines3,sb3_contrib",
            "conquian_train.cli:cli",
            ["ppo", "--out", "/nonexistent/x"],
            "error: conquian-train ppo needs Stable-Baselines3, the 'train' extra: pip install 'conquian-env[train]'",
        ),
        ("numba", "conquian_train.cli:cli", ["exit", "--out", "/nonexistent/x"], "conquian-train exit needs numba"),
    ],
)
def test_a_command_without_its_extra_fails_in_one_line(blocked, command, argv, told, python_without):
    module, function = command.split(":")
    code = f"sys.argv = sys.argv[1:]\nimport {module}\nsys.exit({module}.{function}())"
    prog = told.split()[0] if told.startswith("conquian-") else "conquian-train"
    run = python_without(blocked, code, prog, *argv, timeout=120)
    assert run.returncode == 2, run.stderr
    text = (run.stderr or run.stdout).strip()
    assert len(text.splitlines()) == 1 and told in text, run.stderr + run.stdout


def test_an_import_error_that_is_no_missing_extra_comes_back_as_it_was():
    ours = ModuleNotFoundError("No module named 'conquian_env.nothing'", name="conquian_env.nothing")
    assert missing(ours, "x") is ours  # a module of ours missing is a bug, not an extra
    broken = ImportError("numba needs NumPy 2.2 or less")  # installed, but failing as it imports
    assert missing(broken, "x") is broken
    told = missing(ModuleNotFoundError("No module named 'flask'", name="flask"), "conquian-play --web")
    assert isinstance(told, MissingExtraError) and isinstance(told, ImportError) and told.name == "flask"
    assert str(told) == "conquian-play --web needs Flask, the 'web' extra: pip install 'conquian-env[web]'"
    # torch has no extra: its own line, whichever extra asked
    torch = missing(ModuleNotFoundError("No module named 'torch'", name="torch"), "y", extra="rllib")
    assert str(torch) == f"y needs torch: {TORCH_INSTALL}"


@pytest.mark.parametrize(
    ("example", "blocked", "install"),
    [
        ("jax_ppo", "jax,pgx,optax", "conquian-env[jax]"),
        ("tianshou_dqn", "tianshou", "conquian-env[tianshou]"),
        ("agilerl_dqn", "agilerl,peft,tensordict", "conquian-env[agilerl]"),
        ("rllib_selfplay", "ray", "conquian-env[rllib]"),
        ("cleanrl_ppo", "torch", TORCH_INSTALL),
        ("scorer_curve", "numba", "conquian-env[fast]"),
    ],
)
def test_an_example_without_its_extra_exits_with_one_line(example, blocked, install, python_without):
    path = ROOT / "examples" / f"{example}.py"
    code = f"import runpy\nsys.argv = [{str(path)!r}]\nrunpy.run_path({str(path)!r}, run_name='__main__')"
    run = python_without(blocked, code)
    assert run.returncode == 1, run.stderr
    assert run.stderr.startswith(f"error: examples/{example}.py needs "), run.stderr
    assert len(run.stderr.splitlines()) == 1 and install in run.stderr, run.stderr
