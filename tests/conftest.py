"""Shared fixtures: the book is built once per test session, from a copy."""

from __future__ import annotations

import pytest
from bookbuild import build_book, copy_book


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build a fresh copy of the book exactly as the README does.

    Returns ``(result, html_dir)``.  The copy lives in a new temporary folder,
    so no earlier build or execution cache can leak into it.
    """
    source = copy_book(tmp_path_factory.mktemp("book-src"))
    output = tmp_path_factory.mktemp("book-out")
    result = build_book(source, output)
    return result, output / "_build" / "html"
