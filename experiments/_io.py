"""Kept only for `experiments.view`, which still imports its writer from here: the writers live in
`engine.files` (delete this module once experiments/view.py imports ``engine.files``)."""

from engine.files import write_json, write_text, write_yaml  # noqa: F401
