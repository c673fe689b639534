"""docs/configuration.md's configuration reference is the one generated from the schemas."""

from experiments.reference import DOC, doc_section, markdown


def test_configuration_reference_is_current():
    assert doc_section(DOC.read_text(encoding="utf-8")) == markdown(), (
        "docs/configuration.md's configuration reference is stale: run python -m experiments.reference --write")
