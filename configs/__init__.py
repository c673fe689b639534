"""The shipped configurations (YAML) and the published record they reference (``records/``): package
data, so an installed workbench (``pip install .``, not only an editable checkout) has them. The
commands read ``configs/<name>`` from the current folder when it is there, else the shipped copy
(`path`): ``python -m experiments.run configs/ga_record.yaml`` works from any folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def path(name: str | Path) -> Path:
    """The shipped file ``name`` (relative to this folder, e.g. ``solve/play.yaml``, ``records/x.txt``)."""
    return Path(str(files(__name__).joinpath(str(name))))
