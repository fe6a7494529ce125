"""The project's documents stand alone: their links resolve inside the repository.

README.md and docs/*.md may link to files of the repository and to headings of those files;
no link leaves the repository through a relative path, and no text points to design notes that
are not part of it.
"""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces -> '-'."""
    text = re.sub(r"[`*]", "", heading.strip().lower())   # GitHub keeps underscores
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set:
    body = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", body, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve_inside_the_repository(doc):
    for target in LINK.findall(doc.read_text()):
        if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        assert dest.is_relative_to(ROOT), f"{doc.name}: {target} leaves the repository"
        assert dest.exists(), f"{doc.name}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(dest), f"{doc.name}: no heading #{anchor} in {dest.name}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_design_notes_outside_the_repository(doc):
    text = doc.read_text()
    assert not re.search(r"DESIGN\s*§|DESIGN\.md|shared/design", text), doc.name


def test_readme_links_the_interface_document():
    assert "](docs/interface.md" in (ROOT / "README.md").read_text()


def test_readme_is_a_readme_not_the_manual():
    """The README stays short; the manual lives in docs/ (every document one link away)."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    linked = set(re.findall(r"\]\(docs/([\w.]+\.md)", text))
    assert {p.name for p in (ROOT / "docs").glob("*.md")} <= linked
