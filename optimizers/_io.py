"""Atomic writes for the run directory: every file is complete or absent (temporary file, then rename)."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import yaml


def write_bytes(path: str | Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_yaml(path: str | Path, data, header: str = "") -> None:
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    write_text(path, (header + "\n" if header else "") + body)


def write_pickle(path: str | Path, obj) -> None:
    write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def read_pickle(path: str | Path):
    with open(path, "rb") as f:
        return pickle.load(f)
