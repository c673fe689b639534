"""The docs' generated sections (the configuration reference, the feature table) are the ones made
from the registrations."""

import pytest

from evaluators import registry as features
from experiments.reference import SECTIONS, Generated, main


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.name)
def test_generated_section_is_current(section):
    page = section.page.read_text(encoding="utf-8")
    assert section.in_page(page) == section.markdown(), (
        f"{section.page.name}'s {section.name} section is stale: run python -m experiments.reference --write")


def test_feature_table_lists_every_registered_feature():
    (table,) = [s for s in SECTIONS if s.name == "feature-table"]
    text = table.markdown()
    for name in features.names():
        assert f"| `{name}` |" in text


def test_write_replaces_only_the_section(tmp_path, monkeypatch, capsys):
    page = tmp_path / "page.md"
    section = Generated("demo", page, lambda: "| a |\n|---|")
    page.write_text(f"intro\n\n{section.start}\n\nold\n\n{section.end}\n\noutro\n", encoding="utf-8")
    assert section.write() is True
    assert page.read_text(encoding="utf-8") == f"intro\n\n{section.start}\n\n| a |\n|---|\n\n{section.end}\n\noutro\n"
    assert section.write() is False  # current: the page is left alone
    monkeypatch.setattr("experiments.reference.SECTIONS", (section,))
    assert main([]) == 0
    assert capsys.readouterr().out.strip() == section.markdown()


def test_a_page_without_its_markers_is_named(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"page\.md: no generated demo section"):
        Generated("demo", page, lambda: "").write()
