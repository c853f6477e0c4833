"""The kernels' compile notice and cache folder (conquian_env.compiling), each in a fresh process
with a cache folder of its own, so that numba really compiles."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parent.parent
NOTICE = "conquian-env: compiling"

# one move of a new game through K.apply: it compiles apply, compute_legal and the meld search,
# and apply's meld test calls can_extend(cards, 0), a literal argument
_ONE_MOVE = """
import sys
import numpy as np
from conquian_env import kernels as K
from conquian_env.compiling import announce
S = np.zeros((1, K.NUM_COLUMNS), dtype=np.int64)
with announce("the test's kernels", 3):
    K.start(S, 0, np.arange(40), 0, 0)
    K.apply(S, 0, K.REFUSE)
print([str(sig) for sig in K.can_extend.signatures])
"""


def _run(code: str, env: dict[str, str], cwd: Path = ROOT, path: Path | str = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")} | env
    env["PYTHONPATH"] = str(path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow  # numba compiles the engine in a fresh cache: 7-10 s
def test_a_cold_cache_prints_the_compiling_line_once_and_a_warm_one_none(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    cold = _run(_ONE_MOVE, env)
    lines = [line for line in cold.stderr.splitlines() if line.startswith(NOTICE)]
    assert lines == [
        f"{NOTICE} the test's kernels for this machine with numba, about 3 s (once: kept in "
        f"{tmp_path / 'cache'}{os.sep}conquian_env_{lines[0].split('conquian_env_')[1].split(',')[0]}, "
        "later runs load it in a second)"
    ], cold.stderr
    # compiled once, for plain int64 arguments: not again for apply's literal 0
    assert "Literal" not in cold.stdout and cold.stdout.count("(int64, int64)") == 1, cold.stdout
    warm = _run(_ONE_MOVE, env)
    assert NOTICE not in warm.stderr, warm.stderr


@pytest.mark.slow  # numba compiles the engine in a fresh cache: 7-10 s
def test_a_read_only_package_folder_caches_in_the_users_cache_folder(tmp_path):
    """An install whose folder cannot be written (a system-wide one) keeps its kernels in
    $XDG_CACHE_HOME/conquian-env, so the second process loads them instead of compiling."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "conquian_env", site / "conquian_env", ignore=shutil.ignore_patterns("__pycache__"))
    # a file where numba would make its __pycache__ folder: unwritable even for root, who ignores modes
    (site / "conquian_env" / "__pycache__").write_text("")
    for folder, _, files in os.walk(site):
        os.chmod(folder, 0o555)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    try:
        cold = _run(_ONE_MOVE, env, cwd=tmp_path, path=site)
        assert str(tmp_path / "xdg" / "conquian-env") in cold.stderr, cold.stderr
        assert list((tmp_path / "xdg" / "conquian-env").rglob("kernels.apply-*.nbi")), "no cached apply"
        warm = _run(_ONE_MOVE, env, cwd=tmp_path, path=site)
        assert NOTICE not in warm.stderr, warm.stderr
    finally:
        for folder, _, _ in os.walk(site):
            os.chmod(folder, 0o755)


def test_of_a_parents_workers_only_the_first_to_compile_prints_the_line(tmp_path):
    code = """
import multiprocessing

def compile_in_worker(_):
    import numpy as np
    from conquian_env import kernels as K
    K.num_legal(np.zeros((1, K.NUM_COLUMNS), dtype=np.int64), 0)

if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(compile_in_worker, range(2), chunksize=1)
"""
    script = tmp_path / "workers.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env |= {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count(NOTICE) == 1, done.stderr


def test_a_kernel_without_cache_is_refused():
    from numba import njit

    from conquian_env.compiling import prepare_kernels

    @njit
    def uncached(x):
        return x + 1

    with pytest.raises(RuntimeError, match=r"uncached is compiled without cache=True"):
        prepare_kernels({"__name__": uncached.py_func.__module__, "uncached": uncached})


@pytest.mark.slow  # numba compiles the engine in a fresh cache: 7-10 s
def test_a_kernel_compiles_again_when_a_kernel_it_calls_changed(tmp_path):
    """numba keys a kernel's cache on its own file only: the search's playouts, which call the
    engine's kernels, kept playing the engine they were compiled with after ``kernels.py`` changed
    (a rule variant's playouts all differed from the scalar engine's until the cache was cleared)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    callee = package / "callee.py"
    head = "from numba import njit\nfrom conquian_env.compiling import prepare_kernels, setup\nsetup(__file__)\n"
    callee.write_text(head + "@njit(cache=True)\ndef value():\n    return 1\nprepare_kernels(globals())\n")
    (package / "caller.py").write_text(
        head + "from pkg import callee as _callee\nfrom pkg.callee import value\n"
        "@njit(cache=True)\ndef twice():\n    return 2 * value()\nprepare_kernels(globals())\n"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    code = "from pkg.caller import twice; print(twice())"
    path = f"{tmp_path}{os.pathsep}{ROOT}"
    assert _run(code, env, path=path).stdout.split() == ["2"]
    assert _run(code, env, path=path).stdout.split() == ["2"]  # from the cache
    callee.write_text(callee.read_text().replace("return 1", "return 21"))  # caller.py is unchanged
    assert _run(code, env, path=path).stdout.split() == ["42"]  # before: 2, the stale callee
    done = _run(code + "; print(sum(twice.stats.cache_hits.values()))", env, path=path)
    assert done.stdout.split() == ["42", "1"]  # and cached again: the next process loads it


# --------------------------------------------------------------------------- a damaged cache


def _cache_files(folder: Path, suffix: str) -> list[Path]:
    return sorted(p for p in folder.rglob(f"*{suffix}") if p.is_file())


_GARBLED = ("garbage .nbi", ".nbi", lambda b: b"\x80\x04garbage, not a pickle" * 3)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(_GARBLED, id="garbage .nbi, and every sources stamp a folder"),
        pytest.param(("empty .nbi", ".nbi", lambda b: b""), id="empty .nbi", marks=pytest.mark.slow),
        pytest.param(("truncated .nbc", ".nbc", lambda b: b[: len(b) // 2]), id="truncated .nbc",
                     marks=pytest.mark.slow),
    ],
)  # fmt: skip
def test_a_cache_that_cannot_be_loaded_is_flushed_once_and_compiled_again(tmp_path, damage):
    # before: every run stopped with an unpickling traceback naming no file, and stayed stopped;
    # a sources stamp that was a folder made every process compile again, each leaving a .partial.PID file
    _, suffix, change = damage
    cache = tmp_path / "cache"
    env = {"NUMBA_CACHE_DIR": str(cache)}
    _run(_ONE_MOVE, env)
    files = _cache_files(cache, suffix)
    assert files
    for path in files:
        path.write_bytes(change(path.read_bytes()))
    damaged = _run(_ONE_MOVE, env)
    said = [line for line in damaged.stderr.splitlines() if "cannot be read" in line]
    assert said and all(str(cache) in line and "flushed, compiling again" in line for line in said), damaged.stderr
    assert "Traceback" not in damaged.stderr
    stamps = sorted(cache.rglob("*.sources")) if damage is _GARBLED else []
    for stamp in stamps:  # then every sources stamp a folder: compiled once more, then kept
        stamp.unlink()
        stamp.mkdir()
    if stamps:
        _run(_ONE_MOVE, env)
    again = _run(_ONE_MOVE, env)  # compiled and kept again: loaded, nothing said
    assert "cannot be read" not in again.stderr and NOTICE not in again.stderr, again.stderr
    assert all(s.is_file() for s in stamps) and not list(cache.rglob("*.partial.*"))
