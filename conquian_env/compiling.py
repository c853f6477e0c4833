"""How the numba kernels of conquian-env are compiled, cached and announced.

Every module of compiled kernels (:mod:`conquian_env.kernels`, the ``*_kernels.py`` of ``agents``'s families)
calls :func:`setup` before it defines a kernel and :func:`prepare_kernels` after, and a bot
that compiles on first use wraps its warm-up in :func:`announce`:

* **The cache folder.** numba keeps compiled kernels on disk (``cache=True``), by default
  in ``__pycache__`` next to the source.  ``NUMBA_CACHE_DIR`` is obeyed when set; otherwise,
  when the installed package's folder is not writable (a system-wide install), the cache
  goes to :func:`user_cache_dir` (``$XDG_CACHE_HOME/conquian-env``, or
  ``~/.cache/conquian-env``) instead of being compiled again in every process.  numba reads
  its cache folder once per kernel, when the kernel is defined: hence :func:`setup` first.
* **One line before a compile.** The first time in a process that numba really compiles
  one of our kernels (a cache miss, never a cache hit), one line on stderr says what is
  compiled, that it happens once per machine, where it is kept and about how long it takes
  (:func:`announce` names what and how long).  Of the worker processes of one parent, only
  the first to compile prints it.
* **One signature per kernel.** numba compiles a kernel called from another kernel once per
  *literal* argument type: ``apply(S, 0, REFUSE)`` and ``apply(S, i, a)`` were two
  compilations of the same function.  :func:`prepare_kernels` makes every kernel of a module
  type its compiled callers' arguments as plain values (``int64``, not ``Literal[int](0)``),
  so each kernel is compiled once per argument *type*; it also refuses a kernel without
  ``cache=True``.
* **A cache that cannot be loaded is compiled again.** A cache file cut short or garbled (a
  full disk, a copy interrupted) made numba stop every run with an unpickling traceback; such a
  kernel's cache is flushed once, with one line on stderr naming its folder, and the kernel
  compiled afresh (:func:`prepare_kernels`).  A sources stamp that cannot be written leaves no
  temporary file behind.

Compile times, kernel by kernel, and how to measure them: docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from types import MethodType, ModuleType
from typing import Any

#: the packages whose kernels are announced (a compile of another library's kernel is not ours)
PACKAGES = ("conquian_env.", "agents.")

_SET_UP = False
_announced: list[tuple[str, float | None]] = []  # the active announce() contexts, innermost last
_noticed = False  # the line was printed (or left to another worker) in this process


def user_cache_dir() -> str:
    """The per-user cache folder of the kernels when the package's own is not writable:
    ``$XDG_CACHE_HOME/conquian-env``, else ``~/.cache/conquian-env``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "conquian-env")


def _writable(folder: str) -> bool:
    """Whether numba can write its cache next to the sources in ``folder`` (as numba tests it)."""
    pycache = os.path.join(folder, "__pycache__")
    try:
        os.makedirs(pycache, exist_ok=True)
        tempfile.TemporaryFile(dir=pycache).close()
    except OSError:
        return False
    return True


def setup(source_file: str) -> None:
    """Configure numba before the kernels of ``source_file``'s module are defined: the
    threading layer, the cache folder (see the module docstring) and the compile notice."""
    global _SET_UP
    import numba

    if not os.environ.get("NUMBA_CACHE_DIR") and not numba.config.CACHE_DIR:
        if not _writable(os.path.dirname(os.path.abspath(source_file))):
            numba.config.CACHE_DIR = user_cache_dir()
    if _SET_UP:
        return
    _SET_UP = True
    # numba's OpenMP threading layer shares GNU OpenMP with torch: in a process that imported
    # torch, each parallel launch then waited milliseconds on spinning torch threads (the
    # opponent loop of the vector envs ran 7x slower).  The workqueue layer has no such
    # contention; a threading layer the user chose (NUMBA_THREADING_LAYER) is kept.
    if "NUMBA_THREADING_LAYER" not in os.environ:
        numba.config.THREADING_LAYER = "workqueue"
    from numba.core import event

    class CompileNotice(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            _notice(ev.data.get("dispatcher"))

        def on_end(self, ev: event.Event) -> None:
            pass

    event.register("numba:compile", CompileNotice())


def _typed_call_template(self: Any, args: tuple, kws: dict) -> Any:
    """The dispatcher's ``get_call_template`` with literal argument types made plain."""
    from numba.core import types

    args = tuple(types.unliteral(a) for a in args)
    kws = {k: types.unliteral(v) for k, v in kws.items()}
    return type(self).get_call_template(self, args, kws)


def prepare_kernels(namespace: dict[str, Any]) -> None:
    """Every numba kernel defined in the module whose globals are ``namespace``: refuse one
    without ``cache=True``, and have calls from compiled code compile it for the arguments'
    plain types only (see the module docstring)."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    module = namespace["__name__"]
    for name, obj in list(namespace.items()):
        if not isinstance(obj, CPUDispatcher) or obj.py_func.__module__ != module:
            continue
        if isinstance(obj._cache, NullCache):
            raise RuntimeError(f"{module}.{name} is compiled without cache=True: every kernel is cached on disk")
        obj.get_call_template = MethodType(_typed_call_template, obj)
        obj._cache.load_overload = MethodType(_load_or_flush, obj._cache)
    _guard_cache(namespace)


_flushed: set[str] = set()  # the cache folders said flushed in this process


def _load_or_flush(cache: Any, sig: Any, target_context: Any) -> Any:
    """numba's ``Cache.load_overload``, but a cache that cannot be read (an index or a data file
    cut short or garbled: an unpickling error, an end of file) is flushed and the kernel compiled
    again (``None``: not cached), with one line naming the folder, once per folder."""
    try:
        return type(cache).load_overload(cache, sig, target_context)
    except Exception as err:
        folder = getattr(cache, "cache_path", "?")
        try:
            cache.flush()
        except OSError:
            pass  # numba cannot write there either: the kernel compiles in every process
        if folder not in _flushed:
            _flushed.add(folder)
            print(f"conquian-env: the compiled-kernel cache in {folder} cannot be read ({type(err).__name__}): "
                  "flushed, compiling again", file=sys.stderr, flush=True)  # fmt: skip
        return None


def kernel_sources(namespace: dict[str, Any]) -> list[str]:
    """The source files whose code the kernels of ``namespace``'s module compile in: its own
    file and, transitively, those of every module of compiled kernels it holds (a kernel it
    calls, or the module itself, ``from conquian_env import kernels as _engine``)."""
    from numba.core.registry import CPUDispatcher

    def held(names: dict[str, Any]) -> set[str]:
        found = set()
        for obj in list(names.values()):
            if isinstance(obj, CPUDispatcher):
                found.add(obj.py_func.__module__)
            elif isinstance(obj, ModuleType) and any(
                isinstance(v, CPUDispatcher) and v.py_func.__module__ == obj.__name__ for v in vars(obj).values()
            ):
                found.add(obj.__name__)
        return found

    seen = {namespace["__name__"]}
    todo = sorted(held(namespace) - seen)
    files = [namespace["__file__"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        module = sys.modules.get(name)
        source = getattr(module, "__file__", None)
        if module is None or not source:
            continue
        files.append(source)
        todo.extend(sorted(held(vars(module)) - seen))
    return files


def flush_caches(namespace: dict[str, Any]) -> None:
    """Empty the on-disk cache index of every kernel defined in ``namespace``'s module, so that
    each compiles afresh at its next call (a module whose kernels baked tables that changed
    calls it, besides :func:`prepare_kernels`'s check of the sources)."""
    from numba.core.registry import CPUDispatcher

    module = namespace["__name__"]
    for obj in list(namespace.values()):
        if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module:
            obj._cache.flush()


def _guard_cache(namespace: dict[str, Any]) -> None:
    """numba keys a kernel's on-disk cache on its own file only: a kernel that calls the kernels of
    another module (the search's playouts call the engine's ``apply``) kept the code of the
    callee it was compiled with after that module changed.  Keep, beside the module's cache, the
    SHA-256 of every source its kernels compile in (:func:`kernel_sources`), and when it differs
    (or is not there yet) empty the module's cache indexes, so each kernel compiles afresh."""
    import hashlib

    from numba.core.registry import CPUDispatcher

    module = namespace["__name__"]
    kernels = [v for v in list(namespace.values()) if isinstance(v, CPUDispatcher) and v.py_func.__module__ == module]
    if not kernels:
        return
    digest = hashlib.sha256()
    for source in kernel_sources(namespace):
        with open(source, "rb") as f:
            digest.update(os.path.basename(source).encode() + b"\0" + f.read() + b"\0")
    stamp = digest.hexdigest()
    folder = kernels[0]._cache.cache_path
    path = os.path.join(folder, f"{module}.sources")
    try:
        with open(path, encoding="ascii") as f:
            if f.read().strip() == stamp:
                return
    except (OSError, UnicodeDecodeError):
        pass
    flush_caches(namespace)
    partial = f"{path}.partial.{os.getpid()}"
    try:
        os.makedirs(folder, exist_ok=True)
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)  # an empty folder in the stamp's place (a non-empty one: said below)
        with open(partial, "w", encoding="ascii") as f:
            f.write(stamp + "\n")
        os.replace(partial, path)
    except OSError as err:  # a folder numba cannot write either: every process compiles anyway
        with contextlib.suppress(OSError):
            os.unlink(partial)  # no litter
        if os.path.lexists(path) and not os.path.isfile(path):
            print(f"conquian-env: {path} is not a file ({err.strerror}): remove it, or the kernels of {module} "
                  "compile again in every process", file=sys.stderr, flush=True)  # fmt: skip


@contextlib.contextmanager
def announce(what: str, seconds: float | None = None) -> Iterator[None]:
    """While in this context, a compile is announced as compiling ``what`` (e.g. "the compiled
    search") in about ``seconds`` (on one core of a laptop; None: not said)."""
    _announced.append((what, seconds))
    try:
        yield
    finally:
        _announced.pop()


def _first_in_family() -> bool:
    """True in a main process; in a worker process, True for the first of its parent's
    workers to ask (a marker file in the temporary folder, named by the parent and its start)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is None:
        return True
    try:
        with open(f"/proc/{parent.pid}/stat", "rb") as f:
            started = f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        started = "0"
    marker = os.path.join(tempfile.gettempdir(), f"conquian-env-compile-notice-{parent.pid}-{started}")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def notice_line(what: str | None, seconds: float | None, cache_path: str | None) -> str:
    """The line printed before the first compile."""
    what = what or "numba kernels"
    took = f"about {seconds:g} s" if seconds else "up to a minute"
    where = f"kept in {cache_path}" if cache_path else "kept on disk"
    return (
        f"conquian-env: compiling {what} for this machine with numba, {took} (once: {where}, "
        "later runs load it in a second)"
    )


def _notice(dispatcher: Any) -> None:
    """At the start of a compile: print :func:`notice_line` if it is the first of our kernels."""
    global _noticed
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    if _noticed or not module.startswith(PACKAGES):
        return
    _noticed = True
    if not _first_in_family():
        return
    what, seconds = _announced[-1] if _announced else (None, None)
    cache = getattr(getattr(dispatcher, "_cache", None), "cache_path", None)
    print(notice_line(what, seconds, cache), file=sys.stderr, flush=True)
