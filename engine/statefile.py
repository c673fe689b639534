"""State files: a run's or a search's state saved as data and read back by explicit code.

Reading a state file never runs code named in it (as unpickling would): it holds plain values
only, and the code that restores an object (`from_state`, `load_state`) builds it from its own
configuration and checks every value it takes in.

A state is a tree of dicts, lists, tuples, strings, numbers, booleans and None, with numpy arrays
and scalars of numeric or boolean dtype among them. `write_state` writes it as one zip file, put
in place atomically (`engine.files.write_bytes`): ``state.json`` holds the tree (the file's
``kind`` and format ``version`` around it), each array replaced by a reference to its member
``arrays/<n>.npy`` in numpy's own format; ``numpy.load`` opens the file too (``allow_pickle``
off). `read_state` reads it back within bounds, every problem one `StateError` line naming the
file; `Fields` reads a restored tree the way restoring code needs it (``f.int("generation")``).
"""

from __future__ import annotations

import io
import json
import math
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .files import ReadError, read_bytes, write_bytes
from .files.reading import _amount

#: what ``state.json`` says it is, and the version of this layout
FORMAT, VERSION = "tetris-workbench state", 1
#: the most members a state file may hold (a segment search's table and history: a few hundred)
MAX_MEMBERS = 100_000
#: the dtypes an array may have: booleans, integers, floats (no objects, strings or structures)
ARRAY_KINDS = "biuf"
#: bytes read at a time from a member being inflated
CHUNK = 1 << 20
#: the marks of values JSON has no form for (one-key objects)
ARRAY, SCALAR, TUPLE, ITEMS = "$array", "$scalar", "$tuple", "$items"


class StateError(ReadError):
    """A state file that cannot be read, or whose content is not the state it should be: one line,
    ``<file>: <problem>``."""


# ------------------------------------------------------------------------------------------------
# Writing


def _encode(value: Any, arrays: list) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in ARRAY_KINDS:
            raise TypeError(f"an array of dtype {value.dtype} cannot be saved as state")
        # in its own memory order: numpy's products of an array read back in another order may
        # differ in the last bit (a CMA-ES's eigenvectors, Fortran-ordered, would draw otherwise)
        fortran = value.flags.f_contiguous and not value.flags.c_contiguous
        arrays.append(np.asfortranarray(value) if fortran else np.ascontiguousarray(value))
        return {ARRAY: len(arrays) - 1}
    if isinstance(value, np.generic):
        if value.dtype.kind not in ARRAY_KINDS:
            raise TypeError(f"a numpy value of dtype {value.dtype} cannot be saved as state")
        arrays.append(np.asarray(value))
        return {SCALAR: len(arrays) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {TUPLE: [_encode(v, arrays) for v in value]}
    if isinstance(value, list):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _encode(v, arrays) for k, v in value.items()}
        return {ITEMS: [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} cannot be saved as state (plain values and numpy arrays only)")


def state_bytes(tree: Any, kind: str, compress: bool = False) -> bytes:
    """The bytes of a state file holding ``tree`` (see the module docstring); TypeError for a value
    that is not plain data."""
    arrays: list[np.ndarray] = []
    doc = {"format": FORMAT, "version": VERSION, "kind": kind, "state": _encode(tree, arrays)}
    text = json.dumps(doc, allow_nan=True, separators=(",", ":"))
    buffer = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buffer, "w", compression=method, compresslevel=6 if compress else None) as zf:
        zf.writestr("state.json", text)
        for n, a in enumerate(arrays):
            with zf.open(f"arrays/{n}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)
    return buffer.getvalue()


def write_state(path: str | Path, tree: Any, kind: str, compress: bool = False) -> None:
    """Save ``tree`` as the state file ``path``, atomically (the previous file stays whole until the
    new one replaces it); with ``compress`` its members are deflated (a segment search's table
    shrinks 10-15 times)."""
    write_bytes(path, state_bytes(tree, kind, compress))


# ------------------------------------------------------------------------------------------------
# Reading


def _inflate(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, inflated no further than the size it declares (one byte more is a lie)."""
    parts, got = [], 0
    with zf.open(info) as member:
        while got <= info.file_size:
            part = member.read(min(CHUNK, info.file_size + 1 - got))
            if not part:
                break
            parts.append(part)
            got += len(part)
    if got != info.file_size:
        raise ValueError(f"{info.filename} inflates to {'more' if got > info.file_size else 'less'} than the "
                         f"{info.file_size:,} bytes it declares")
    return b"".join(parts)


def _array(data: bytes, name: str) -> np.ndarray:
    """The array in the .npy bytes ``data``, its header checked against its bytes."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:
        raise ValueError(f"{name}: numpy format version {version} is not one this program writes")
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{name}: dtype {dtype} is not a plain number type")
    count = math.prod(shape)
    offset = f.tell()
    if count * dtype.itemsize != len(data) - offset:
        raise ValueError(f"{name}: its header says {shape} of {dtype}, its data hold {len(data) - offset:,} bytes")
    a = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    return a.reshape(shape, order="F" if fortran else "C").copy(order="A")  # (in the order it was saved)


def _decode(value: Any, arrays: dict[int, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (mark, inner), = value.items()
        if mark in (ARRAY, SCALAR):
            if type(inner) is not int or inner not in arrays:
                raise ValueError(f"a reference to a missing array ({inner!r})")
            return arrays[inner] if mark == ARRAY else arrays[inner][()]
        if mark == TUPLE and isinstance(inner, list):
            return tuple(_decode(v, arrays) for v in inner)
        if mark == ITEMS and isinstance(inner, list):
            out = {}
            for pair in inner:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError("a mapping's item is not a pair")
                key = _decode(pair[0], arrays)
                try:
                    out[key] = _decode(pair[1], arrays)
                except TypeError:
                    raise ValueError(f"a mapping's key of type {type(key).__name__}") from None
            return out
    return {k: _decode(v, arrays) for k, v in value.items()}


def read_state(path: str | Path, kind: str, limit: int) -> Any:
    """The tree saved in the state file ``path`` by `write_state` with the same ``kind``, read
    within ``limit`` bytes on disk and inflated; `StateError` in one line otherwise.

    Only a regular file is read (a FIFO, a device or a socket is refused at once), no larger than
    ``limit``; its members are inflated no further than the sizes they declare and those sizes must
    be within the limit (so a small file that would inflate to gigabytes is refused before it is
    inflated); each member's checksum is checked, each array's header checked against its bytes,
    and no object array is taken."""
    path = Path(path)
    try:
        data = read_bytes(path, limit, "a state file")  # (a regular file only, within the limit)
    except ReadError as e:
        raise StateError(e.path, e.problem) from None
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise StateError(path, "not a state file (not a zip archive)") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise StateError(path, f"not a state file: more than {MAX_MEMBERS:,} members")
        declared = sum(i.file_size for i in infos)
        if declared > limit:
            raise StateError(path, f"would inflate to {declared:,} bytes, more than {_amount(limit)}: refused "
                                   "before inflating")
        names = {i.filename: i for i in infos}
        if "state.json" not in names:
            raise StateError(path, "not a state file (no state.json in it)")
        try:
            doc = json.loads(_inflate(zf, names["state.json"]).decode("utf-8"))
            if not (isinstance(doc, dict) and doc.get("format") == FORMAT):
                raise StateError(path, "not a state file (state.json does not say it is one)")
            if doc.get("version") != VERSION:
                raise StateError(path, f"a state file of format version {doc.get('version')!r}; this program "
                                       f"reads version {VERSION}")
            if doc.get("kind") != kind:
                raise StateError(path, f"holds {doc.get('kind')!r}, not {kind}")
            arrays = {}
            for name, info in names.items():
                if name == "state.json":
                    continue
                stem = name[len("arrays/"):-len(".npy")] if name.startswith("arrays/") and name.endswith(".npy") else ""
                if not stem.isdigit():
                    raise StateError(path, f"not a state file (a member named {name!r})")
                arrays[int(stem)] = _array(_inflate(zf, info), name)
            return _decode(doc.get("state"), arrays)
        except StateError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError) as e:
            raise StateError(path, f"damaged: {_first_line(e)}") from None
        except (ValueError, UnicodeDecodeError, RecursionError, OverflowError, TypeError, MemoryError) as e:
            raise StateError(path, f"not a readable state file: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return (text.splitlines()[0] if text else type(e).__name__)[:200]


# ------------------------------------------------------------------------------------------------
# Reading a restored tree


class Fields:
    """Typed access to a restored mapping: each accessor returns the value under ``key`` when it
    has the type asked for, and raises `StateError` naming the file and the key otherwise
    (``where`` is the dotted path of the mapping itself)."""

    def __init__(self, data: Any, path: str | Path, where: str = ""):
        self.path = path
        self.where = where
        if not isinstance(data, dict):
            self.fail(where or "the state", f"a mapping, not {_type(data)}")
        self.data = data

    def name(self, key) -> str:
        return f"{self.where}.{key}" if self.where else str(key)

    def fail(self, key: str, problem: str):
        raise StateError(self.path, f"{key}: {problem}")

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def raw(self, key: str) -> Any:
        if key not in self.data:
            self.fail(self.name(key), "missing")
        return self.data[key]

    def has(self, key: str) -> bool:
        return key in self.data

    def int(self, key: str, low: int | None = None, high: int | None = None, value: Any = ...) -> int:
        v = self.raw(key) if value is ... else value
        if isinstance(v, np.integer):
            v = int(v)
        if type(v) is not int:
            self.fail(self.name(key), f"an integer, not {_type(v)}")
        if (low is not None and v < low) or (high is not None and v > high):
            self.fail(self.name(key), f"{v} is out of range [{low}, {high}]")
        return v

    def float(self, key: str, finite: bool = True, value: Any = ...) -> float:
        v = self.raw(key) if value is ... else value
        if isinstance(v, (np.floating, np.integer)):
            v = v.item()
        if type(v) not in (int, float):
            self.fail(self.name(key), f"a number, not {_type(v)}")
        v = float(v)
        if finite and not math.isfinite(v):
            self.fail(self.name(key), f"{v} is not a finite number")
        return v

    def bool(self, key: str) -> bool:
        v = self.raw(key)
        if type(v) is not bool:
            self.fail(self.name(key), f"true or false, not {_type(v)}")
        return v

    def str(self, key: str) -> str:
        v = self.raw(key)
        if type(v) is not str:
            self.fail(self.name(key), f"a string, not {_type(v)}")
        return v

    def optional(self, key: str, read, *args, **kw):
        """``read(key, ...)`` (one of these accessors), or None when the value is None or missing."""
        return None if self.data.get(key) is None else read(key, *args, **kw)

    def list(self, key: str, length: int | None = None) -> list:
        v = self.raw(key)
        if not isinstance(v, (list, tuple)):
            self.fail(self.name(key), f"a list, not {_type(v)}")
        if length is not None and len(v) != length:
            self.fail(self.name(key), f"{len(v)} items where {length} are expected")
        return list(v)

    def dict(self, key: str) -> dict:
        v = self.raw(key)
        if not isinstance(v, dict):
            self.fail(self.name(key), f"a mapping, not {_type(v)}")
        return v

    def sub(self, key: str) -> "Fields":
        return Fields(self.dict(key), self.path, self.name(key))

    def subs(self, key: str) -> list["Fields"]:
        return [Fields(v, self.path, f"{self.name(key)}[{i}]") for i, v in enumerate(self.list(key))]

    def array(self, key: str, dtype=None, shape: tuple | None = None, ndim: int | None = None,
              finite: bool = False, value: Any = ...) -> np.ndarray:
        """The array under ``key``: of ``dtype`` exactly (when given), of ``shape`` (None entries
        match any length) or ``ndim`` dimensions, its values finite with ``finite``."""
        v = self.raw(key) if value is ... else value
        name = self.name(key)
        if not isinstance(v, np.ndarray):
            self.fail(name, f"an array, not {_type(v)}")
        if dtype is not None and v.dtype != np.dtype(dtype):
            self.fail(name, f"an array of {np.dtype(dtype)}, not {v.dtype}")
        if ndim is not None and v.ndim != ndim:
            self.fail(name, f"an array of {ndim} dimensions, not {v.ndim}")
        if shape is not None and (v.ndim != len(shape) or any(s is not None and s != t for s, t in zip(shape, v.shape))):
            wanted = ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "")
            self.fail(name, f"an array of shape ({wanted}), not {v.shape}")
        if finite and v.dtype.kind == "f" and not np.isfinite(v).all():
            self.fail(name, "holds values that are not finite")
        return v


def _type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, np.ndarray):
        return f"an array of {v.dtype}"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            tuple: "a list", dict: "a mapping"}.get(type(v), type(v).__name__)


# ------------------------------------------------------------------------------------------------
# Limits, and the files of older versions

#: the most bytes a run's checkpoint may take, on disk and inflated (the largest in results/: 2 MB)
MAX_RUN_STATE_BYTES = 256 * 2**20
#: the command that converts the pickled state files of older versions (`legacy_problem`)
CONVERT_COMMAND = "python -m experiments.convert"


def legacy_problem(where: str | Path) -> str:
    """What a refusal says of a state file an older version pickled: it is not read (unpickling
    runs code named in the file), and the command that converts it once."""
    return (f"a state file pickled by an older version, which this version does not read (unpickling can run "
            f"code named in the file); convert it once with: {CONVERT_COMMAND} {where}")
#: the most bytes a saved search (a segment search's table and history) may take, on disk and inflated
MAX_SEARCH_STATE_BYTES = 2**30
