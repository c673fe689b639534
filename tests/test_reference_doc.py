"""The README's configuration reference is the one generated from the schemas."""

from experiments.reference import README, markdown, readme_section


def test_readme_reference_is_current():
    assert readme_section(README.read_text(encoding="utf-8")) == markdown(), (
        "README.md's configuration reference is stale: run python -m experiments.reference --write")
