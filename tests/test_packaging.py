"""The package as a user installs it: the index page (long description), making the
environment by name, and the one-line errors of a plain install (no numba, no torch).
The wheel itself, installed into a fresh venv and run from another folder, is checked by
``.ci/wheel.sh`` in CI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_long_description_reads_right_on_a_package_index():
    # before: the long description was README.md: 27 relative links (broken on the index), `.venv/bin/...`, `make`
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    readme = project["readme"]
    assert readme["content-type"] == "text/markdown"
    text = (ROOT / readme["file"]).read_text()
    targets = re.findall(r"\]\(([^)\s]+)", text) + re.findall(r"""(?:href|src)=["']([^"']+)""", text)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, flags=re.M)  # reference-style links
    assert targets, "the page links to the libraries it works with"
    relative = [t for t in targets if not re.match(r"https?://", t)]
    assert relative == [], f"relative links break on a package index: {relative}"
    assert ".venv/" not in text and not re.search(r"^\s*make\b", text, flags=re.M)
    for extra in project["optional-dependencies"]:
        if extra not in ("dev", "render"):  # render: kept for old install lines, empty
            assert f"`[{extra}]`" in text, f"the extras table does not cost out [{extra}]"
    assert "1.2.2" in text and "CUDA" in text and "download.pytorch.org/whl/cpu" in text


def test_gymnasium_makes_the_env_by_module_prefix_without_an_import():
    # neither library loads third-party plugins (no entry points in gymnasium 1.x or pettingzoo 1.27):
    # gymnasium's "module:id" spelling imports the package; the plain id needs `import conquian_env` first
    code = """
import gymnasium as gym
try:
    gym.make("conquian_env/Conquian-v0")
except gym.error.Error as err:
    print("plain id without import:", type(err).__name__)
env = gym.make("conquian_env:conquian_env/Conquian-v0", opponent="greedy")
obs, info = env.reset(seed=0)
print("prefix:", type(env.unwrapped).__name__, info["action_mask"].sum() > 0)
import conquian_env
env = gym.make("conquian_env/Conquian-v0")
print("plain id after import:", env.spec.id)
"""
    run = run_python(code)
    assert run.returncode == 0, run.stderr
    assert re.search(r"plain id without import: Name(space)?NotFound", run.stdout), run.stdout
    assert "prefix: SingleAgentEnv True" in run.stdout
    assert "plain id after import: conquian_env/Conquian-v0" in run.stdout


def test_pettingzoo_makes_the_env_by_name_after_the_import():
    code = """
import pettingzoo
from pettingzoo.utils.env import AECEnv
try:
    pettingzoo.make("aec", "Conquian-v0")
except Exception as err:
    print("without import:", type(err).__name__)
import conquian_env
env = pettingzoo.make("aec", "Conquian-v0")
env.reset(seed=1)
print("after import:", isinstance(env.unwrapped, AECEnv), env.possible_agents)
"""
    run = run_python(code)
    assert run.returncode == 0, run.stderr
    assert "without import: NameNotFound" in run.stdout
    assert "after import: True ['player_0', 'player_1']" in run.stdout


def test_a_bot_without_its_extra_fails_in_one_line_naming_it(python_without):
    # before: `conquian-evaluate pimc greedy` without numba printed a 30-line traceback
    code = "from conquian_arena.tournament import main\nsys.exit(main(sys.argv[1:]))"
    run = python_without("numba", code, "pimc", "greedy", "--games", "2", "--no-plot", timeout=120)
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.splitlines()) == 1 and "conquian-env[fast]" in run.stderr, run.stderr


def test_the_ppo_bot_without_torch_names_torch_not_the_train_extra(python_without):
    # before: it said pip install 'conquian-env[train]', which pulls a CUDA torch through SB3
    code = "from conquian_arena.tournament import main\nsys.exit(main(sys.argv[1:]))"
    run = python_without("torch", code, "ppo", "greedy", "--games", "2", "--no-plot", timeout=120)
    assert run.returncode == 2, run.stderr
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert "torch" in run.stderr and "download.pytorch.org/whl/cpu" in run.stderr and "[train]" not in run.stderr
