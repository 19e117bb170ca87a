"""Every mutant of ``benchmarks/mutation.py`` still applies: its snippet occurs exactly once.

The mutation benchmark reports a mutant whose snippet no longer occurs as
*stale* and skips it, so a rewrite of the code or of a chapter can quietly
shrink the set of wrong claims the book is shown to catch.  This test makes
that a failure at once, without running a single mutant.
"""

from __future__ import annotations

import importlib.util

import pytest
from bookbuild import ROOT


def _mutation():
    spec = importlib.util.spec_from_file_location("mutation", ROOT / "benchmarks" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MUTATION = _mutation()


@pytest.mark.parametrize("mutant", MUTATION.MUTANTS, ids=lambda m: f"{m[0]}: {m[3]}")
def test_package_mutant_applies(mutant):
    path, snippet, replacement, _ = mutant
    text = (ROOT / "src" / "attnscale" / path).read_text()
    assert text.count(snippet) == 1, f"{path}: the snippet occurs {text.count(snippet)} times"
    assert replacement != snippet


@pytest.mark.parametrize("mutant", MUTATION.CLAIM_MUTANTS, ids=lambda m: f"{m[0]}: {m[3]}")
def test_claim_mutant_applies(mutant):
    chapter, snippet, replacement, _ = mutant
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    assert text.count(snippet) == 1, f"{chapter}: the snippet occurs {text.count(snippet)} times"
    assert replacement != snippet
