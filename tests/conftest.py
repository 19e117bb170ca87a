"""Shared fixtures: the book is built once per test session, from a copy."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bookbuild import build_book, copy_book


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build a fresh copy of the book exactly as the README does.

    Returns ``(result, html_dir)``.  The copy lives in a new temporary folder,
    so no earlier build or execution cache can leak into it.

    ATTNSCALE_BUILT_HTML=<dir> uses an existing build's HTML folder instead
    (for iterating on the browser tests only; the full suite builds afresh).
    """
    existing = os.environ.get("ATTNSCALE_BUILT_HTML")
    if existing:
        done = subprocess.CompletedProcess(["(existing build)"], 0, "", "")
        return done, Path(existing)
    source = copy_book(tmp_path_factory.mktemp("book-src"))
    output = tmp_path_factory.mktemp("book-out")
    result = build_book(source, output)
    return result, output / "_build" / "html"
