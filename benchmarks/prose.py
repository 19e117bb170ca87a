"""The book's reading load, from the built HTML: prose words and sentences over 40 words, per page and part.

    python benchmarks/prose.py [_build/html]

Prose is counted as ``tests/prose.py`` defines it (paragraphs, list items and
captions outside code cells; a formula is one word).  The reading path is
the landing page and the parts whose caption does not start with
"Appendices"; the second edition holds it to 25,000 words, each chapter to
2,500, and no sentence over 40 words outside a displayed list item
(``tests/test_reading.py``).  The column "in lists" counts the long sentences
inside list items, which the limit allows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from prose import page_prose  # noqa: E402


def parts(toc_path: Path = ROOT / "_toc.yml") -> list[tuple[str, list[str]]]:
    """(caption, pages) for the landing page and each part of the table of contents."""
    toc = yaml.safe_load(toc_path.read_text())
    out = [("Landing page", [toc["root"]])]
    for part in toc.get("parts", []):
        out.append((part["caption"], [entry["file"] for entry in part.get("chapters", [])]))
    return out


def reading_load(html: Path) -> list[tuple[str, str, int, int, int]]:
    """(part caption, page, words, sentences over 40 words outside and inside list items) per page."""
    rows = []
    for caption, pages in parts():
        for page in pages:
            prose = page_prose(html / f"{page}.html", page)
            rows.append(
                (caption, page, prose.words, len(prose.long_sentences), len(prose.long_list_sentences))
            )
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    html = Path(argv[0]) if argv else ROOT / "_build" / "html"
    rows = reading_load(html)
    print(f"{'page':<28} {'words':>7} {'>40':>5} {'in lists':>8}")
    totals = {"reading path": [0, 0, 0], "appendices": [0, 0, 0]}
    for caption, page, words, long, in_lists in rows:
        print(f"{page:<28} {words:>7} {long:>5} {in_lists:>8}   {caption}")
        key = "appendices" if caption.startswith("Appendices") else "reading path"
        for k, value in enumerate((words, long, in_lists)):
            totals[key][k] += value
    for key, (words, long, in_lists) in totals.items():
        print(f"{key:<28} {words:>7} {long:>5} {in_lists:>8}")


if __name__ == "__main__":
    main()
