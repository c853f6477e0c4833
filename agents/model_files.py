"""Reading model files as untrusted data: archive checks with caps, plain arrays, bounded weights,
and the one rule by which a network's scores become a legal move (docs/bots.md, "Model files").

Both model formats are zip archives: the action scorer's ``.npz`` (:mod:`agents.scorer.scorer`), the
learner snapshots' ``.npz`` (:func:`conquian_train.policy_files.load_snapshots`) and MaskablePPO's ``.zip``
(:mod:`agents.networks.ppo`).  Before a byte of a member is decompressed, :func:`check_archive` reads the
archive's central directory and refuses unknown or duplicate names, directory tricks (absolute
paths, ``..``, folders), too many members and declared sizes over the caps; :func:`read_member`
then reads at most the declared size (a member that holds more than it declares fails its CRC),
and :func:`read_npy` reads an ``.npy`` member's header first (dtype, shape, size) and its data
only when they are allowed.  Every refusal is a :class:`ModelFileError` naming the file and the fault.

Weights are bounded twice (:func:`check_weights`): each value by :data:`MAX_ABS_WEIGHT`, and the
whole network by interval arithmetic: for every input within the observation's range the
pre-activations of every layer stay below :data:`MAX_ACTIVATION`, so a loaded network's scores are
finite in float32.  A network built in memory (a training snapshot) has no such check, so every
bot that turns scores into a move goes through :func:`best_legal` / :func:`best_legal_rows`: the
highest score among the legal actions (ties: the lowest action id), NaN counting as the lowest;
never an illegal action.  When a legal action's score is not finite the move is still that rule's
and a :class:`NonFiniteScoresWarning` says so once per bot (turn it into an error with
``warnings.simplefilter("error", NonFiniteScoresWarning)``).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "MAX_ABS_WEIGHT",
    "MAX_ACTIVATION",
    "MAX_ARCHIVE_BYTES",
    "MAX_MEMBERS",
    "ModelFileError",
    "NonFiniteScoresWarning",
    "best_legal",
    "best_legal_rows",
    "check_archive",
    "check_weights",
    "open_archive",
    "parse_json",
    "strict_loads",
    "read_layer_archive",
    "read_member",
    "read_meta",
    "read_npy",
]

#: the largest model file read at all (bytes on disk)
MAX_ARCHIVE_BYTES = 1 << 30
#: the most members an archive may list (a scorer has 2 per layer + meta; a MaskablePPO zip 6)
MAX_MEMBERS = 4096
#: the largest weight or bias a model may hold, in absolute value (trained ones stay below 10)
MAX_ABS_WEIGHT = 1e4
#: the largest value a layer may reach for any input in the observation's range (float32 ends at 3.4e38)
MAX_ACTIVATION = 1e30
#: the largest ``.npy`` header read (numpy's own default)
_MAX_NPY_HEADER = 10_000


class ModelFileError(ValueError):
    """A model file that cannot be used; the message names the file and what is wrong."""


class NonFiniteScoresWarning(RuntimeWarning):
    """A network gave a legal action a NaN or infinite score; the bot played :func:`best_legal`'s move."""


def write_npz(path: str | Path, arrays: dict[str, np.ndarray], compressed: bool = True) -> Path:
    """Write a model file atomically: ``np.savez`` (``compressed``: ``np.savez_compressed``) into a
    temporary file beside ``path``, readable by all (0644), then renamed: complete or absent."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp.npz")
    os.close(fd)
    try:
        (np.savez_compressed if compressed else np.savez)(tmp, **arrays)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def open_archive(path: Path, where: str, what: str = "zip archive") -> zipfile.ZipFile:
    """The zip at ``path`` (at most :data:`MAX_ARCHIVE_BYTES` on disk), or a :class:`ModelFileError`
    saying it is not a ``what``."""
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ModelFileError(f"{where}: cannot read it ({err})") from err
    if size > MAX_ARCHIVE_BYTES:
        raise ModelFileError(f"{where}: {size} bytes, more than a model file may have ({MAX_ARCHIVE_BYTES})")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:  # ValueError: a corrupt directory
        raise ModelFileError(f"{where}: not a {what} ({err})") from err


def check_archive(
    zf: zipfile.ZipFile,
    where: str,
    caps: Callable[[str], int | None],
    *,
    required: Iterable[str] = (),
    max_members: int = MAX_MEMBERS,
    max_total: int,
) -> dict[str, zipfile.ZipInfo]:
    """The members of ``zf`` by name, checked from the central directory alone (nothing decompressed).

    ``caps(name)``: the most bytes member ``name`` may hold once decompressed, None for a name the
    format does not have.  Refused: more than ``max_members`` members, a name given twice, a
    folder, an absolute path or ``..``, an unknown name, a member over its cap, all members
    together over ``max_total``, an encrypted member or an unknown compression, a missing ``required`` one."""
    infos = zf.infolist()
    if len(infos) > max_members:
        raise ModelFileError(f"{where}: {len(infos)} archive members, more than the {max_members} allowed")
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        if name in members:
            raise ModelFileError(f"{where}: the archive holds {name!r} twice")
        if info.is_dir() or name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/") or ":" in name:
            raise ModelFileError(f"{where}: archive member {name!r} is a folder or a path outside the archive")
        cap = caps(name)
        if cap is None:
            raise ModelFileError(f"{where}: unexpected archive member {name!r}")
        if info.flag_bits & 0x1:
            raise ModelFileError(f"{where}: archive member {name!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ModelFileError(f"{where}: archive member {name!r} uses compression {info.compress_type}")
        if info.file_size > cap:
            raise ModelFileError(
                f"{where}: archive member {name!r} holds {info.file_size} bytes uncompressed, more than its cap {cap}"
            )
        total += info.file_size
        members[name] = info
    if total > max_total:
        raise ModelFileError(f"{where}: its members hold {total} bytes uncompressed, more than the {max_total} allowed")
    missing = sorted(set(required) - set(members))
    if missing:
        raise ModelFileError(f"{where}: the archive lacks {missing}")
    return members


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """The bytes of member ``info``: at most its declared (checked) size, all of them or an error."""
    try:
        with zf.open(info) as fp:
            data = fp.read(info.file_size + 1)
            if len(data) == info.file_size:
                fp.read(1)  # at the end: zipfile checks the CRC
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as err:
        raise ModelFileError(f"{where}: archive member {info.filename!r} is corrupt ({err})") from err
    if len(data) != info.file_size:
        raise ModelFileError(
            f"{where}: archive member {info.filename!r} holds {len(data)} bytes, its directory says {info.file_size}"
        )
    return data


def read_npy(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, *, kinds: str, max_bytes: int, ndims: tuple[int, ...]
) -> np.ndarray:
    """The array in ``.npy`` member ``info``: its header read first, from a capped stream; refused
    unless its dtype kind is in ``kinds`` (``"f"`` floats, ``"U"`` text), its item size at most 8
    (text: any), its number of dimensions in ``ndims`` and its data at most ``max_bytes``, exactly
    what the member holds after the header.  Only then is the data read."""
    name = info.filename
    try:
        with zf.open(info) as fp:
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp, max_header_size=_MAX_NPY_HEADER)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp, max_header_size=_MAX_NPY_HEADER)
            else:
                raise ValueError(f"npy format version {version}")
            header = fp.tell()
            if dtype.hasobject:
                raise ModelFileError(
                    f"{where}: {name} holds Python objects (pickles are refused: a model file "
                    "is a readable .npz of plain arrays)"
                )
            if dtype.kind not in kinds or (dtype.kind != "U" and dtype.itemsize > 8):
                raise ModelFileError(f"{where}: {name} has dtype {dtype}, expected {_kind_names(kinds)}")
            if dtype.fields is not None or dtype.subdtype is not None:
                raise ModelFileError(f"{where}: {name} has a structured dtype {dtype}")
            if len(shape) not in ndims:
                raise ModelFileError(f"{where}: {name} has shape {shape}, expected {' or '.join(map(str, ndims))} dims")
            nbytes = dtype.itemsize
            for n in shape:
                nbytes *= n
            if nbytes > max_bytes:
                raise ModelFileError(f"{where}: {name} of shape {shape} holds {nbytes} bytes, more than {max_bytes}")
            if header + nbytes != info.file_size:
                raise ModelFileError(
                    f"{where}: {name} declares {nbytes} bytes of data but the member holds {info.file_size - header}"
                )
            data = fp.read(nbytes + 1)
            if len(data) == nbytes:
                fp.read(1)  # zipfile checks the CRC at the end
    except ModelFileError:
        raise
    except Exception as err:  # numpy's header parser raises ValueError, SyntaxError, tokenize.TokenError, ...
        raise ModelFileError(f"{where}: {name} is not a plain .npy array ({type(err).__name__}: {err})") from err
    if len(data) != nbytes:
        raise ModelFileError(f"{where}: {name} holds {len(data)} bytes of data, its header says {nbytes}")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C").copy()


def strict_loads(text: str | bytes) -> Any:
    """``text`` (bytes as UTF-8) as JSON, refusing what ``json.loads`` lets through: a repeated key
    (``ValueError`` naming it), NaN and Infinity.  Bad UTF-8 or JSON is a ``ValueError`` as in
    ``json.loads``; nesting too deep for the parser is a ``RecursionError``: the one strict reader
    of model metas, run configs and record lines."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            key = repr(next(k for k in keys if keys.count(k) > 1))
            raise ValueError(f"the key {key if len(key) <= 60 else key[:57] + '...'} is repeated")
        return dict(items)

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    return json.loads(text.decode("utf-8") if isinstance(text, bytes) else text, object_pairs_hook=pairs,
                      parse_constant=constant)  # fmt: skip


def parse_json(text: str | bytes, where: str, what: str = "meta") -> object:
    """``text`` as strict JSON (:func:`strict_loads`), or a :class:`ModelFileError` naming ``where``
    and ``what``: bad UTF-8, bad JSON, an integer of thousands of digits (Python's limit on int
    conversion) and nesting too deep for the parser all end here."""
    try:
        return strict_loads(text)
    except RecursionError:
        raise ModelFileError(f"{where}: its {what} is not JSON (nested too deep)") from None
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError, a 5,000-digit integer, a repeated key
        raise ModelFileError(f"{where}: its {what} is not JSON ({str(err)[:200]})") from None


def read_meta(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, max_bytes: int) -> dict:
    """The JSON object of the ``meta.npy`` member ``info`` (one unicode string of at most
    ``max_bytes``: :func:`read_npy`), parsed by :func:`parse_json`; a :class:`ModelFileError` for
    anything else."""
    text = read_npy(zf, info, where, kinds="U", max_bytes=max_bytes, ndims=(0,))
    meta = parse_json(str(text), where)
    if not isinstance(meta, dict):
        raise ModelFileError(f"{where}: its meta is {type(meta).__name__}, expected a JSON object")
    return meta


def read_layer_archive(
    path: Path,
    where: str,
    member_cap: Callable[[str], int | None],
    *,
    max_layers: int,
    max_total: int,
    max_meta: int,
    max_array: int,
    made_by: str,
    what: str,
    check_meta: Callable[[dict], Any],
    extras: dict[str, int] | None = None,
) -> tuple[dict, list[tuple[np.ndarray, np.ndarray]], Any, dict[str, np.ndarray]]:
    """The meta and layers of an ``.npz`` of plain arrays (``meta``, ``w0, b0, ... wK, bK``), read as untrusted
    data: the archive's directory (``member_cap`` per name, at most ``max_layers`` layers, ``max_total``
    bytes), the strict JSON meta, then ``check_meta(meta)`` (its result is returned third), then each array's
    header before its data (floats; weights 2-d, biases 1-d).  ``made_by`` names what writes such files,
    ``what`` the kind of file ("a scorer"), for the errors.  ``extras``: arrays the file may hold beside the
    layers (name: number of dimensions; ``member_cap`` caps them too), returned fourth by name."""
    if not path.is_file():
        raise ModelFileError(f"{where}: no such file (give the .npz that {made_by} wrote)")
    with open_archive(path, where, "readable .npz of plain arrays") as zf:
        extras = extras or {}
        members = check_archive(zf, where, member_cap, max_members=2 * max_layers + 1 + len(extras),
                                max_total=max_total)  # fmt: skip
        if "meta.npy" not in members:
            raise ModelFileError(f"{where}: no JSON 'meta' string (is it {what} from {made_by}?)")
        meta = read_meta(zf, members.pop("meta.npy"), where, max_meta)  # strict JSON: a named error
        checked = check_meta(meta)
        found = {name: read_npy(zf, members.pop(f"{name}.npy"), where, kinds="f", max_bytes=max_array, ndims=(n,))
                 for name, n in extras.items() if f"{name}.npy" in members}  # fmt: skip
        names = sorted(n[: -len(".npy")] for n in members)
        count = len(names) // 2
        if not count or set(names) != {f"{k}{i}" for i in range(count) for k in "wb"}:
            raise ModelFileError(f"{where}: arrays {names}, expected w0, b0, ... w{count - 1}, b{count - 1}")
        layers = [
            tuple(
                read_npy(zf, members[f"{k}{i}.npy"], where, kinds="f", max_bytes=max_array, ndims=(n,))
                for k, n in (("w", 2), ("b", 1))
            )
            for i in range(count)
        ]
    return meta, layers, checked, found


def _kind_names(kinds: str) -> str:
    return ", ".join({"f": "floats (float16/32/64)", "U": "a unicode string"}[k] for k in kinds)


def check_weights(
    where: str,
    layers: list[tuple[str, str, np.ndarray, np.ndarray, str]],
    input_bound: float | np.ndarray,
) -> np.ndarray:
    """Bound a network's weights: ``layers`` are ``(weight's name, bias's name, weight (out, in), bias
    (out,), activation)`` (``"ReLU"``, ``"Tanh"``, ``"Identity"``, or ``"ReLU+pool"``: ReLU, then the
    outputs joined by their mean and maximum over the candidates of a deep-sets network), applied in order to inputs
    within ``±input_bound``.

    Each weight and bias must be finite and at most :data:`MAX_ABS_WEIGHT` in absolute value, and
    (interval arithmetic, in float64) every layer's outputs at most :data:`MAX_ACTIVATION` for
    every such input, so that the network computes finite scores in float32.  ``input_bound`` may also
    give one bound per input; returns the bound of the last layer's outputs."""
    size = layers[0][2].shape[1] if layers else 0
    bound = np.broadcast_to(np.asarray(input_bound, np.float64), (size,)).copy()
    for w_name, b_name, w, b, act in layers:
        for name, a in ((w_name, w), (b_name, b)):
            if not np.isfinite(a).all():
                raise ModelFileError(f"{where}: {name} holds NaN or infinite values")
            top = float(np.abs(a).max()) if a.size else 0.0
            if top > MAX_ABS_WEIGHT:
                raise ModelFileError(
                    f"{where}: {name} holds a value of magnitude {top:.3g}; "
                    f"a model's weights are at most {MAX_ABS_WEIGHT:g} in absolute value"
                )
        bound = np.abs(np.asarray(w, np.float64)) @ bound + np.abs(np.asarray(b, np.float64))
        top = float(bound.max()) if bound.size else 0.0
        if not top <= MAX_ACTIVATION:
            raise ModelFileError(
                f"{where}: {w_name} can reach {top:.3g} for inputs within ±{float(np.max(input_bound)):g}, "
                f"more than the {MAX_ACTIVATION:g} a layer may (its scores could overflow float32)"
            )
        if act == "Tanh":
            bound = np.minimum(bound, 1.0)
        elif act == "ReLU+pool":  # the outputs joined by their mean and maximum over a set: [h, mean, max]
            bound = np.tile(bound, 3)
    return bound


_warned: set[str] = set()


def _warn(who: str, rows: int) -> None:
    if who in _warned:
        return
    _warned.add(who)
    warnings.warn(
        f"{who}: the network gave a legal action a NaN or infinite score (in {rows} position(s)); "
        "it plays the highest legal score, NaN counting as the lowest, ties to the lowest action id "
        "(warned once per bot)",
        NonFiniteScoresWarning,
        stacklevel=3,
    )


def best_legal(scores: np.ndarray, mask: np.ndarray, who: str) -> int:
    """The legal action (``mask``) with the highest score (ties: the lowest id; NaN below all); never
    an illegal one.  A legal NaN or infinite score gives a :class:`NonFiniteScoresWarning` once per ``who``."""
    mask = np.asarray(mask, dtype=bool)
    legal = np.flatnonzero(mask)
    if not len(legal):
        raise ValueError(f"{who}: no legal action to choose from")
    s = np.asarray(scores, dtype=np.float64)[legal]
    if not np.isfinite(s).all():
        _warn(who, 1)
        s = np.where(np.isnan(s), -np.inf, s)
    return int(legal[int(np.argmax(s))])


def best_legal_rows(scores: np.ndarray, masks: np.ndarray, who: str) -> np.ndarray:
    """:func:`best_legal` for each row of ``scores`` ``(N, A)`` and ``masks`` ``(N, A)``."""
    masks = np.asarray(masks, dtype=bool)
    if len(masks) and not masks.any(axis=1).all():
        raise ValueError(f"{who}: a position with no legal action")
    s = np.asarray(scores, dtype=np.float64)
    bad = ~np.isfinite(s) & masks
    if bad.any():
        _warn(who, int(bad.any(axis=1).sum()))
        s = np.where(np.isnan(s), -np.inf, s)
    # illegal actions below every legal one, even a legal -inf: rank, not value
    order = np.where(masks, s, -np.inf)
    best = np.argmax(order, axis=1)
    stuck = ~masks[np.arange(len(masks)), best]  # every legal score -inf: the lowest legal id
    if stuck.any():
        best[stuck] = np.argmax(masks[stuck], axis=1)
    return best.astype(np.int64)


def torch_archive_check(data: bytes, where: str, name: str, max_bytes: int) -> None:
    """``data`` (a ``.pth`` member) must be torch's zip format with stored records that add up to at
    most ``max_bytes``, so that ``torch.load`` allocates no more than the bytes it is given."""
    try:
        inner = zipfile.ZipFile(io.BytesIO(data))
        infos = inner.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as err:
        raise ModelFileError(
            f"{where}: {name} is not a weights-only state dict (not a torch zip archive: {err})"
        ) from err
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError(f"{where}: {name} has {len(infos)} records, more than {MAX_MEMBERS}")
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise ModelFileError(f"{where}: {name} record {info.filename!r} is compressed (torch stores records)")
        total += info.file_size
    if total > max_bytes:
        raise ModelFileError(f"{where}: {name} records hold {total} bytes, more than {max_bytes}")
