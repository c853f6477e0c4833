"""Model files as hostile input (issue 25): zip bombs, huge weights, the critic's tensors, and a
crafted-file fuzz of both formats (the scorer's ``.npz`` and MaskablePPO's ``.zip``).

Every bad file must give a :class:`agents.model_files.ModelFileError` naming the file and the
fault, without decompressing more than the caps allow; a file that loads must make a bot that
never plays an illegal move.  The bomb tests run the loader in a subprocess whose address space
is capped (``RLIMIT_AS``) at what it had after its imports plus 768 MiB, for bombs that unpack
to 2 GiB: a loader that decompresses first dies of ``MemoryError`` there.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import textwrap
import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from agents import make_agent
from agents.model_files import MAX_ABS_WEIGHT, ModelFileError, NonFiniteScoresWarning, best_legal, best_legal_rows
from agents.scorer.scorer import CANDIDATE_SIZE, DEFAULT_SCORER, FORMAT, ActionScorer, ScorerAgent, load_scorer
from conquian_arena.match import deal_for_seed, play_game
from conquian_env.layout import MELD_FEATURES, OBSERVATION
from conquian_env.model_layouts import FEATURE_SETS

#: the stamp of a scorer file of this version (its meld layout), for the files crafted here
MELD_STAMP = FEATURE_SETS["meld"].stamp()

REPO = Path(__file__).resolve().parents[1]
GIB2 = 2 << 30


# --------------------------------------------------------------------------- crafted archives


def _deflate(prefix: bytes, zeros: int) -> bytes:
    """A raw deflate stream of ``prefix`` then ``zeros`` zero bytes, built from one compressed
    MiB repeated (about 1 KiB per MiB: a 2 GiB member is a 2 MB file, made in milliseconds)."""
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = block.compress(bytes(1 << 20)) + block.flush(zlib.Z_FULL_FLUSH)
    full, rest = divmod(zeros, 1 << 20)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    return out + chunk * full + tail.compress(bytes(rest)) + tail.flush()


def _write_zip(path: Path, members: list[tuple[str, bytes, int, int, bool]]) -> Path:
    """A zip written by hand: ``(name, stored bytes, declared size, crc, deflated)`` each, as the
    directory says (a bomb's declared size is honest; its CRC is not computed: nothing may read that far)."""
    body, central = bytearray(), bytearray()
    for name, data, size, crc, deflated in members:
        raw = name.encode()
        method = 8 if deflated else 0
        offset = len(body)
        body += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(data), size, len(raw), 0)
        body += raw + data
        central += struct.pack(
            "<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(data), size, len(raw), 0, 0, 0, 0, 0,
            offset,
        )  # fmt: skip
        central += raw
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(body), 0)
    path.write_bytes(bytes(body + central + end))
    return path


def _stored(name: str, data: bytes) -> tuple[str, bytes, int, int, bool]:
    return (name, data, len(data), zlib.crc32(data), False)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _scorer_meta() -> bytes:
    return _npy(np.array(json.dumps({"format": FORMAT, "candidate_size": CANDIDATE_SIZE, "hidden": [], **MELD_STAMP})))


def scorer_bomb(path: Path) -> Path:
    """A scorer ``.npz`` (2 MB) whose ``w0`` unpacks to 2 GiB of float32 zeros."""
    n = GIB2 // 4
    header = _npy_header((CANDIDATE_SIZE, n // CANDIDATE_SIZE))
    data = _deflate(header, 4 * CANDIDATE_SIZE * (n // CANDIDATE_SIZE))
    size = len(header) + 4 * CANDIDATE_SIZE * (n // CANDIDATE_SIZE)
    return _write_zip(
        path,
        [_stored("meta.npy", _scorer_meta()), ("w0.npy", data, size, 0, True),
         _stored("b0.npy", _npy(np.zeros(1, np.float32)))],
    )  # fmt: skip


def scorer_unknown_bomb(path: Path) -> Path:
    """A good scorer plus a member the format does not have, unpacking to 2 GiB (the old loader
    decompressed every member before looking at the names)."""
    good = _members(DEFAULT_SCORER)
    return _write_zip(
        path, [*(_stored(n, d) for n, d in good.items()), ("junk.npy", _deflate(b"", GIB2), GIB2, 0, True)]
    )


def ppo_bomb(path: Path, member: str) -> Path:
    """The shipped MaskablePPO ``.zip`` with ``member`` (``data`` or ``policy.pth``) unpacking to 2 GiB."""
    from agents.networks.ppo import DEFAULT_MODEL

    good = _members(DEFAULT_MODEL)
    rows = [_stored(n, d) for n, d in good.items() if n != member]
    return _write_zip(path, [*rows, (member, _deflate(b"", GIB2), GIB2, 0, True)])


def ppo_view_bomb(path: Path) -> Path:
    """The shipped model whose ``action_net.bias`` is a 4-byte storage seen as 65536 x 65536 (stride 0):
    a 4 GiB tensor in a small ``policy.pth`` (the old loader's ``np.isfinite`` allocated it)."""
    import torch

    from agents.networks.ppo import DEFAULT_MODEL

    state = _torch_state(DEFAULT_MODEL)
    state["mlp_extractor.value_net.2.weight"] = torch.zeros(1).expand(1 << 16, 1 << 16)
    return _rewrite(DEFAULT_MODEL, path, {"policy.pth": _torch_bytes(state)})


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def _rewrite(src: Path, dest: Path, replace: dict[str, bytes | None]) -> Path:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w") as zout:
        for name in zin.namelist():
            if name not in replace:
                zout.writestr(name, zin.read(name))
        for name, data in replace.items():
            if data is not None:
                zout.writestr(name, data)
    return dest


def _torch_state(path: Path) -> dict:
    import torch

    with zipfile.ZipFile(path) as z:
        return dict(torch.load(io.BytesIO(z.read("policy.pth")), weights_only=True))


def _torch_bytes(obj) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


# --------------------------------------------------------------------------- bombs, in a capped process

_PROBE = textwrap.dedent(
    """
    import resource, sys
    {imports}
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) for line in f if line.startswith("VmSize")) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm + (768 << 20), resource.RLIM_INFINITY))
    try:
        {call}
        print("LOADED")
    except MemoryError:
        print("MEMORY")
    except ValueError as err:
        print(type(err).__name__, str(err)[:300])
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would report the forking
    # test process's peak (hundreds of MB late in a full run), while VmHWM is this image's own
    with open("/proc/self/status") as f:
        print("MAXRSS_KIB", next(int(line.split()[1]) for line in f if line.startswith("VmHWM")))
    """
)


def _probe(imports: str, call: str, code_root: Path = REPO) -> tuple[str, int]:
    """Run ``call`` in a fresh process capped at its post-import size + 768 MiB; (its verdict, its max RSS in KiB)."""
    script = _PROBE.format(imports=imports, call=call)
    env = {"PYTHONPATH": str(code_root), "PATH": "/usr/bin:/bin", "NUMBA_DISABLE_JIT": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, cwd=code_root
    )
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, done.stderr[-2000:]
    return lines[0], int(lines[-1].split()[1])


linux_only = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="RLIMIT_AS probe reads /proc")


@linux_only
@pytest.mark.parametrize("make", [scorer_bomb, scorer_unknown_bomb])
def test_a_scorer_zip_bomb_is_refused_from_the_directory(make, tmp_path):
    path = make(tmp_path / "bomb.npz")
    assert path.stat().st_size < 3 << 20
    verdict, rss = _probe("from agents.scorer.scorer import load_scorer", f"load_scorer({str(path)!r})")
    assert verdict.startswith("ModelFileError") and ("more than its cap" in verdict or "unexpected" in verdict), verdict
    assert str(path) in verdict
    assert rss < 700 << 10, f"{rss} KiB at the peak"


def test_ppo_bombs_are_refused_by_name(tmp_path):
    """In process (the capped-process versions below are slow: they import torch afresh)."""
    pytest.importorskip("torch")
    from agents.networks.ppo import read_model

    for member in ("data", "policy.pth"):
        with pytest.raises(ModelFileError, match=f"{member!r} holds {GIB2} bytes uncompressed, more than its cap"):
            read_model(ppo_bomb(tmp_path / f"{member}.zip", member))
    with pytest.raises(ModelFileError, match=r"value_net.2.weight has shape \(65536, 65536\)"):
        read_model(ppo_view_bomb(tmp_path / "view.zip"))


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("member", ["data", "policy.pth"])
def test_a_ppo_zip_bomb_is_refused_from_the_directory(member, tmp_path):
    pytest.importorskip("torch")
    path = ppo_bomb(tmp_path / "bomb.zip", member)
    assert path.stat().st_size < 6 << 20
    verdict, _ = _probe("import torch; from agents.networks.ppo import read_model", f"read_model({str(path)!r})")
    assert verdict.startswith("ModelFileError") and f"{member!r} holds {GIB2} bytes" in verdict, verdict


@pytest.mark.slow
@linux_only
def test_a_tensor_seen_through_a_zero_stride_is_refused_before_it_is_read(tmp_path):
    pytest.importorskip("torch")
    path = ppo_view_bomb(tmp_path / "view.zip")
    assert path.stat().st_size < 6 << 20
    verdict, _ = _probe("import torch; from agents.networks.ppo import read_model", f"read_model({str(path)!r})")
    assert verdict.startswith("ModelFileError") and "(65536, 65536)" in verdict, verdict


# --------------------------------------------------------------------------- directory tricks


def _good_scorer_rows() -> list[tuple[str, bytes, int, int, bool]]:
    return [_stored(n, d) for n, d in _members(DEFAULT_SCORER).items()]


SCORER_TRICKS = {
    "duplicate name": (lambda rows: [*rows, rows[1]], "twice"),
    "absolute path": (lambda rows: [*rows, _stored("/etc/w9.npy", b"x")], "outside the archive"),
    "dot dot": (lambda rows: [*rows, _stored("../w1.npy", b"x")], "outside the archive"),
    "folder": (lambda rows: [*rows, _stored("sub/", b"")], "folder"),
    "unknown member": (lambda rows: [*rows, _stored("notes.txt", b"hello")], "unexpected archive member 'notes.txt'"),
    "many members": (lambda rows: rows + [_stored(f"x{i}", b"") for i in range(5000)], "archive members, more than"),
    "size lies low": (
        lambda rows: [(n, d, len(d) - 8 if n == "w0.npy" else s, c, z) for n, d, s, c, z in rows],
        "w0.npy",
    ),
    "size lies high": (
        lambda rows: [(n, d, len(d) + 64 if n == "w1.npy" else s, c, z) for n, d, s, c, z in rows],
        "w1.npy",
    ),
    "bad crc": (lambda rows: [(n, d, s, c ^ 1 if n == "b0.npy" else c, z) for n, d, s, c, z in rows], "b0.npy"),
    "zero-size member": (lambda rows: [_stored("b2.npy", b"") if r[0] == "b2.npy" else r for r in rows], "b2.npy"),
    "layer index 99": (lambda rows: [*rows, _stored("w99.npy", _npy(np.zeros((1, 1), np.float32)))], "w99.npy"),
    "object meta": (
        lambda rows: [_stored("meta.npy", _npy_header((), "|O")) if r[0] == "meta.npy" else r for r in rows],
        "Python objects",
    ),
    "huge meta": (
        lambda rows: [
            (n, _deflate(_npy_header((), "<U100000000"), 400_000_000), 400_000_000 + 128, 0, True)
            if n == "meta.npy"
            else (n, d, s, c, z)
            for n, d, s, c, z in rows
        ],  # fmt: skip
        "meta.npy",
    ),
    "header says more data": (
        lambda rows: [_stored("b0.npy", _npy_header((1 << 20,)) + bytes(512)) if r[0] == "b0.npy" else r for r in rows],
        "declares 4194304 bytes of data",
    ),
    "complex weights": (
        lambda rows: [
            _stored("w2.npy", _npy(np.zeros((128, 1), np.complex64))) if r[0] == "w2.npy" else r for r in rows
        ],  # fmt: skip
        "expected floats",
    ),
    "3-d weights": (
        lambda rows: [
            _stored("w2.npy", _npy(np.zeros((128, 1, 1), np.float32))) if r[0] == "w2.npy" else r for r in rows
        ],  # fmt: skip
        "expected 2 dims",
    ),
}


@pytest.mark.parametrize("case", list(SCORER_TRICKS))
def test_scorer_archive_tricks_get_named_errors(case, tmp_path):
    edit, message = SCORER_TRICKS[case]
    path = _write_zip(tmp_path / "s.npz", edit(_good_scorer_rows()))
    with pytest.raises(ModelFileError, match=message) as err:
        load_scorer(path)
    assert str(path) in str(err.value)


def _good_ppo_rows() -> list[tuple[str, bytes, int, int, bool]]:
    from agents.networks.ppo import DEFAULT_MODEL

    return [_stored(n, d) for n, d in _members(DEFAULT_MODEL).items()]


PPO_TRICKS = {
    "duplicate name": (lambda rows: [*rows, rows[0]], "twice"),
    "dot dot": (lambda rows: [*rows, _stored("../policy.pth", b"x")], "outside the archive"),
    "unknown member": (lambda rows: [*rows, _stored("payload.py", b"import os")], "unexpected archive member"),
    "size lies": (
        lambda rows: [(n, d, len(d) - 1 if n == "data" else s, c, z) for n, d, s, c, z in rows],
        "'data'",
    ),
    "policy not torch's zip": (
        lambda rows: [_stored("policy.pth", b"\x80\x02}q\x00.") if r[0] == "policy.pth" else r for r in rows],
        "not a torch zip archive",
    ),
    "deep json": (
        lambda rows: [_stored("data", b"[" * 100_000 + b"]" * 100_000) if r[0] == "data" else r for r in rows],
        "not JSON",
    ),
}


@pytest.mark.parametrize("case", list(PPO_TRICKS))
def test_ppo_archive_tricks_get_named_errors(case, tmp_path):
    pytest.importorskip("torch")
    from agents.networks.ppo import read_model

    edit, message = PPO_TRICKS[case]
    path = _write_zip(tmp_path / "m.zip", edit(_good_ppo_rows()))
    with pytest.raises(ModelFileError, match=message) as err:
        read_model(path)
    assert str(path) in str(err.value)


def test_a_torch_record_compressed_inside_policy_pth_is_refused(tmp_path):
    """torch stores its records; a deflated one could unpack to anything inside torch.load."""
    pytest.importorskip("torch")
    from agents.networks.ppo import DEFAULT_MODEL, read_model

    inner = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(_members(DEFAULT_MODEL)["policy.pth"])) as zin,
        zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zout,
    ):
        for name in zin.namelist():
            zout.writestr(name, zin.read(name))
    path = _rewrite(DEFAULT_MODEL, tmp_path / "m.zip", {"policy.pth": inner.getvalue()})
    with pytest.raises(ModelFileError, match="is compressed"):
        read_model(path)


# --------------------------------------------------------------------------- huge and non-finite weights


def _scorer_file(tmp_path: Path, edit) -> Path:
    scorer = load_scorer(DEFAULT_SCORER)
    layers = [(w.copy(), b.copy()) for w, b in scorer.layers]
    edit(layers)
    arrays = {f"w{i}": w for i, (w, _) in enumerate(layers)} | {f"b{i}": b for i, (_, b) in enumerate(layers)}
    path = tmp_path / "s.npz"
    meta = {"format": FORMAT, "candidate_size": scorer.inputs.size}  # unstamped, as the shipped file is
    if scorer.pool_after is not None:  # the shipped scorer is a deep-sets one
        meta.update(format=scorer.meta["format"], pool_after=scorer.pool_after)
    np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
    return path


def _set(i, part, value, at=None):
    def edit(layers):
        w, b = layers[i]
        target = w if part == "w" else b
        if at is None:
            target[...] = value
        else:
            target[at] = value

    return edit


@pytest.mark.parametrize(
    "edit, message",
    [
        (_set(0, "w", 3e38), r"w0 holds a value of magnitude 3e\+38; .* at most 10000"),
        (_set(2, "b", -3e38), r"b2 holds a value of magnitude 3e\+38"),
        (_set(1, "w", 2e4, (0, 0)), r"w1 holds a value of magnitude 2e\+04"),
    ],
)
def test_huge_scorer_weights_are_refused_naming_the_array_and_the_bound(edit, message, tmp_path):
    path = _scorer_file(tmp_path, edit)
    with pytest.raises(ModelFileError, match=message):
        load_scorer(path)


def test_weights_each_allowed_but_overflowing_together_are_refused(tmp_path):
    """Seven layers of weights 9e3 (each under the bound): for inputs within ±3 the sixth reaches 3e32."""
    widths = [CANDIDATE_SIZE, 16, 16, 16, 16, 16, 16, 1]
    arrays = {
        f"w{i}": np.full((a, b), 9e3, np.float32) for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False))
    }
    arrays |= {f"b{i}": np.zeros(b, np.float32) for i, b in enumerate(widths[1:])}
    path = tmp_path / "deep.npz"
    np.savez(
        path, meta=np.array(json.dumps({"format": FORMAT, "candidate_size": CANDIDATE_SIZE, **MELD_STAMP})), **arrays
    )
    with pytest.raises(ModelFileError, match=r"w5 can reach 2.94e\+32 for inputs within ±3, more than the 1e\+30"):
        load_scorer(path)


def test_the_bounds_keep_every_shipped_network():
    assert max(float(np.abs(a).max()) for layer in load_scorer(DEFAULT_SCORER).layers for a in layer) < 10
    assert MAX_ABS_WEIGHT >= 1e3


def _broken_scorer(variant: str) -> ActionScorer:
    """The shipped scorer overflowed in memory (a diverged fit; a file like it is refused):
    ``"first"``: w0 at 3e38 (scores inf and NaN); ``"last"``: w2 at -3e38 (every score -inf, which
    the old argmax turned into action 0, illegal at every offer)."""
    scorer = load_scorer(DEFAULT_SCORER)
    k = 0 if variant == "first" else -1
    w, b = scorer.layers[k]
    scorer.layers[k] = (np.full_like(w, 3e38 if variant == "first" else -3e38), b)
    return scorer


def _play(bot, games: int = 6) -> list:
    out = []
    for g in range(games):
        hands, stock = deal_for_seed(50 + g)
        seats = [bot, make_agent("random", seed=g)] if g % 2 == 0 else [make_agent("random", seed=g), bot]
        out.append(play_game(seats, hands=hands, stock=stock, seed=g))
    return out


@pytest.mark.parametrize("variant", ["first", "last"])
def test_a_scorer_with_overflowing_scores_never_plays_an_illegal_move(variant):
    bot = ScorerAgent.from_scorer(_broken_scorer(variant), name=f"scorer:broken-{variant}")
    with pytest.warns(NonFiniteScoresWarning, match=bot.name), np.errstate(all="ignore"):
        records = _play(bot)
    assert [r.failure for r in records] == [None] * len(records)


def _nan_on_refusal() -> ActionScorer:
    """A network whose refusal score is NaN (inf - inf) and every other candidate's 0."""
    from agents.scorer.scorer import GREEDY_SLOT

    refuse = GREEDY_SLOT - 1  # the "refuse" kind flag
    w0 = np.zeros((CANDIDATE_SIZE, 2), np.float32)
    w0[refuse, :] = 3e38
    b0 = np.full(2, 3e38, np.float32)
    scorer = ActionScorer([(np.zeros((CANDIDATE_SIZE, 2), np.float32), np.zeros(2, np.float32)),
                           (np.array([[1.0], [-1.0]], np.float32), np.zeros(1, np.float32))])  # fmt: skip
    scorer.layers[0] = (w0, b0)
    return scorer


def test_nan_scores_count_lowest_in_the_bot_and_in_the_compiled_search():
    """At an offer, take scores 0 and refuse NaN: both the bot and the search's compiled network take."""
    pytest.importorskip("numba")
    from agents.scorer import scorer_kernels as SK
    from conquian_env import kernels as E
    from conquian_env.actions import TAKE
    from conquian_env.vector import VectorGame

    scorer = _nan_on_refusal()
    bot = ScorerAgent.from_scorer(scorer, name="scorer:nan")
    net = SK.network(scorer)
    games = VectorGame(64, observations=False, parallel=False, seed=3)
    rng = np.random.default_rng(3)
    offers = 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", NonFiniteScoresWarning)
        for i in range(64):
            for _ in range(rng.integers(0, 30)):
                S = games.state
                if S[i, E.PHASE] == E.GAME_OVER:
                    break
                if S[i, E.PHASE] == E.OFFER and S[i, E.LMISC] & 3 == 3:
                    game = games.get_game(i)
                    from conquian_env.observation import action_mask, encode
                    from conquian_env.view import PlayerView

                    p = game.player
                    bot.reset(p)
                    move = bot.act(encode(game, p), action_mask(game, p), PlayerView(game, p))
                    assert move == TAKE == SK.scorer_action(S, i, *net)
                    offers += 1
                E.apply(S, i, E.random_legal(S, i, rng.random()))
    assert offers >= 20


def test_best_legal_never_picks_an_illegal_action():
    mask = np.zeros(85, bool)
    mask[[3, 40, 81]] = True
    nan = np.full(85, np.nan)
    assert best_legal(np.full(85, -np.inf), mask, "t1") == 3  # every score -inf: the lowest legal id
    assert best_legal(nan, mask, "t2") == 3
    scores = np.full(85, np.inf)
    scores[40] = np.nan
    scores[[3, 81]] = [-np.inf, 1.0]
    assert best_legal(scores, mask, "t3") == 81  # +inf elsewhere is illegal
    rows = best_legal_rows(np.stack([np.full(85, -np.inf), scores, np.zeros(85)]), np.stack([mask] * 3), "t4")
    assert rows.tolist() == [3, 81, 3]
    with pytest.raises(ValueError, match="no legal action"):
        best_legal(np.zeros(85), np.zeros(85, bool), "t5")


# --------------------------------------------------------------------------- ppo: huge weights, critic, optimizer


def _ppo_file(tmp_path: Path, **tensors) -> Path:
    from agents.networks.ppo import DEFAULT_MODEL

    state = _torch_state(DEFAULT_MODEL)
    for name, value in tensors.items():
        state[name.replace("__", ".")] = value
    return _rewrite(DEFAULT_MODEL, tmp_path / "m.zip", {"policy.pth": _torch_bytes(state)})


def _ppo_cases():
    torch = pytest.importorskip("torch")
    return {
        "huge actor": (
            {"action_net__weight": torch.full((85, 256), 3e38)},
            r"action_net.weight holds a value of magnitude 3e\+38; a model's weights are at most 10000",
        ),
        "nan critic": (
            {"value_net__weight": torch.full((1, 256), float("nan"))},
            "value_net.weight holds NaN",
        ),
        "huge critic": (
            {"mlp_extractor__value_net__0__bias": torch.full((256,), -1e20)},
            r"value_net.0.bias holds a value of magnitude 1e\+20",
        ),
        "critic shape": ({"value_net__weight": torch.zeros(1, 200)}, "value_net reads 200 inputs"),
        "two values": (
            {"value_net__weight": torch.zeros(2, 256), "value_net__bias": torch.zeros(2)},
            "value_net gives 2 values",
        ),
        "no critic": ({"value_net__bias": None}, r"missing tensors \['value_net.bias'\]"),
        "bfloat16": ({"value_net__bias": torch.zeros(1, dtype=torch.bfloat16)}, "not a float tensor"),
    }


@pytest.mark.parametrize(
    "case",
    ["huge actor", "nan critic", "huge critic", "critic shape", "two values", "no critic", "bfloat16"],
)  # fmt: skip
def test_every_tensor_of_a_ppo_model_is_checked(case, tmp_path):
    from agents.networks.ppo import DEFAULT_MODEL, read_model

    tensors, message = _ppo_cases()[case]
    if any(v is None for v in tensors.values()):
        state = _torch_state(DEFAULT_MODEL)
        for k in tensors:
            state.pop(k.replace("__", "."))
        path = _rewrite(DEFAULT_MODEL, tmp_path / "m.zip", {"policy.pth": _torch_bytes(state)})
    else:
        path = _ppo_file(tmp_path, **tensors)
    with pytest.raises(ModelFileError, match=message):
        read_model(path)
    with pytest.raises(ValueError, match=message):
        make_agent(f"ppo:{path}")


def _broken_policy(variant: str = "mixed"):
    """The shipped policy diverged in memory (a learner snapshot; a file like it is refused):
    ``"mixed"``: the last layer at ±3e38 (logits inf, -inf and NaN: the old sampling crashed on
    "Probabilities contain NaN"); ``"-inf"``: every logit -inf (the old argmax played action 0)."""
    from agents.networks.ppo import DEFAULT_MODEL, load_policy

    policy = load_policy(DEFAULT_MODEL)
    w, b, act = policy.layers[-1]
    if variant == "mixed":
        signs = np.random.default_rng(0).choice([-1.0, 1.0], w.shape)
        policy.layers[-1] = ((signs * 3e38).astype(np.float32), b, act)
    else:
        policy.layers[-1] = (w, np.full_like(b, -np.inf), act)
    return policy


@pytest.mark.parametrize("variant", ["mixed", "-inf"])
@pytest.mark.parametrize("deterministic", [True, False])
def test_a_ppo_policy_with_overflowing_logits_never_plays_an_illegal_move(deterministic, variant):
    pytest.importorskip("torch")
    from agents.networks.ppo import PolicyAgent

    bot = PolicyAgent(_broken_policy(variant), deterministic=deterministic, seed=1)
    bot.name = f"ppo:broken-{deterministic}-{variant}"
    with pytest.warns(NonFiniteScoresWarning, match=bot.name), np.errstate(all="ignore"):
        records = _play(bot)
    assert [r.failure for r in records] == [None] * len(records)


@pytest.mark.parametrize("variant", ["mixed", "-inf"])
@pytest.mark.parametrize("deterministic", [True, False])
def test_a_batched_policy_with_overflowing_logits_never_plays_an_illegal_move(deterministic, variant):
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from agents.base import BatchRandom
    from agents.networks.batched import BatchPolicy
    from conquian_arena.batch import play_batch
    from conquian_env.vector import deal_permutation

    bot = BatchPolicy(_broken_policy(variant), deterministic=deterministic, seed=2)
    checked = []

    class Checked:
        """The bot, each of its moves checked legal against the engine's masks."""

        def act_batch(self, games, rows):
            from conquian_env.kernels import PLAYER

            acts = bot.act_batch(games, rows)
            _, masks = games.observe_rows(rows, games.state[rows, PLAYER], masks_only=True)
            assert masks[np.arange(len(rows)), acts].all(), "an illegal move"
            checked.append(len(rows))
            return acts

    deals = np.stack([deal_permutation(*deal_for_seed(100 + g)) for g in range(16)])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", NonFiniteScoresWarning)
        play_batch(Checked(), BatchRandom(3), deals, np.arange(16) % 2)
    assert sum(checked) > 100


def test_resume_refuses_a_checkpoint_with_a_nan_critic(tmp_path):
    """A NaN value_net.weight used to pass read_model and --resume, and training died after a rollout."""
    torch = pytest.importorskip("torch")
    train = pytest.importorskip("conquian_train.recipes.ppo")  # the ppo recipe: main, TrainConfig, train_ppo
    from tests.test_model_safety import _run_folder

    path = _ppo_file(tmp_path, value_net__weight=torch.full((1, 256), float("nan")))
    out = _run_folder(tmp_path, path, total_steps=128)
    config = json.loads((out / "config.json").read_text())
    with pytest.raises(ValueError, match="value_net.weight holds NaN"):
        train.train_ppo(train.TrainConfig.from_dict(config), resume=True)


def _checkpoint_with_optimizer(tmp_path: Path, edit) -> tuple[Path, object]:
    """A checkpoint of a small fresh model whose Adam state is filled (and edited), and that model."""
    torch = pytest.importorskip("torch")
    sb3c = pytest.importorskip("sb3_contrib")
    from agents.networks.ppo import stamp_model
    from conquian_env.wrappers import SingleAgentEnv

    model = sb3c.MaskablePPO("MlpPolicy", SingleAgentEnv(), n_steps=32, batch_size=32,
                             policy_kwargs={"net_arch": [16]}, seed=0, device="cpu")  # fmt: skip
    params = list(model.policy.parameters())
    opt = model.policy.optimizer.state_dict()
    opt["state"] = {
        i: {"step": torch.tensor(3.0), "exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.ones_like(p)}
        for i, p in enumerate(params)
    }
    edit(opt["state"])
    stamp_model(model, "raw")  # as a run of this version saves it
    model.save(tmp_path / "ck.zip")
    path = _rewrite(tmp_path / "ck.zip", tmp_path / "ck2.zip", {"policy.optimizer.pth": _torch_bytes(opt)})
    return path, model


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s[0]["exp_avg_sq"].fill_(float("nan")), "optimizer state 0.exp_avg_sq holds NaN"),
        (lambda s: s[1].update(exp_avg=s[1]["exp_avg"][:3]), "optimizer state 1.exp_avg has shape"),
        (lambda s: s[2]["exp_avg_sq"].fill_(-1.0), "optimizer state 2.exp_avg_sq is negative"),
        (lambda s: s.update({99: {"exp_avg": s[0]["exp_avg"]}}), "names parameter 99"),
    ],
)
def test_restore_checks_the_optimizer_state(edit, message, tmp_path):
    from conquian_train.policy_files import restore_checkpoint

    path, model = _checkpoint_with_optimizer(tmp_path, edit)
    with pytest.raises(ModelFileError, match=message):
        restore_checkpoint(model, path, "raw")


def test_restore_takes_a_good_optimizer_state(tmp_path):
    from conquian_train.policy_files import restore_checkpoint

    path, model = _checkpoint_with_optimizer(tmp_path, lambda s: None)
    restore_checkpoint(model, path, "raw")
    assert len(model.policy.optimizer.state) == len(list(model.policy.parameters()))


def _of_this_version(policy):
    """``policy`` as a network of this version's inputs: its first layer's weights at its own
    pieces' slots, 0 for the pieces added since it was trained (the same when none were)."""
    from agents.networks.ppo import NumpyPolicy

    w, b, act = policy.layers[0]
    if policy.columns is not None:
        wide = np.zeros((w.shape[0], FEATURE_SETS[policy.features].size), np.float32)
        wide[:, policy.columns] = w
        w = wide
    return NumpyPolicy([(w, b, act), *policy.layers[1:]], policy.features)


def test_snapshots_files_are_checked(tmp_path):
    pytest.importorskip("torch")
    from agents.networks.ppo import DEFAULT_MODEL, load_policy
    from conquian_train.policy_files import load_snapshots, save_snapshots

    policy = _of_this_version(load_policy(DEFAULT_MODEL))  # a learner's snapshot reads this version's inputs
    save_snapshots(tmp_path / "s.npz", [policy, policy])
    back = load_snapshots(tmp_path / "s.npz", "meld")
    assert len(back) == 2 and np.array_equal(back[1].layers[0][0], policy.layers[0][0])
    save_snapshots(tmp_path / "none.npz", [])
    assert load_snapshots(tmp_path / "none.npz", "meld") == []
    huge = _of_this_version(_broken_policy("mixed"))
    save_snapshots(tmp_path / "huge.npz", [policy, huge])
    with pytest.raises(ModelFileError, match=r"snapshot 1 layer 2 weight holds a value of magnitude 3e\+38"):
        load_snapshots(tmp_path / "huge.npz", "meld")
    with pytest.raises(
        ModelFileError, match=f"reads {MELD_FEATURES.size} inputs, 'raw' features are {OBSERVATION.size}"
    ):
        load_snapshots(tmp_path / "s.npz", "raw")
    rows = [_stored(n, d) for n, d in _members(tmp_path / "s.npz").items()]
    _write_zip(tmp_path / "bomb.npz", [*rows, ("s0_l9_w.npy", _deflate(b"", GIB2), GIB2, 0, True)])
    with pytest.raises(ModelFileError, match="more than its cap"):
        load_snapshots(tmp_path / "bomb.npz", "meld")
