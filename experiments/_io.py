"""Writing artifacts: every file is complete or absent (write a temporary file, then rename)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import yaml


def write_text(path: str | Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: str | Path, data) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")


def write_yaml(path: str | Path, data, header: str = "") -> None:
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    write_text(path, (header + "\n" if header else "") + body)
