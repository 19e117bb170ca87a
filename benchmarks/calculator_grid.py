"""The calculator page against the package on the whole grids the tests sample (issue 43).

    python benchmarks/calculator_grid.py            # every grid (minutes; needs Chromium)
    python benchmarks/calculator_grid.py tables     # one grid by name (see GRIDS)

``tests/test_calculator_page.py`` compares ``book/_static/calculator.js``
with ``attnscale`` on a sample of each of its random grids, so that the test
suite stays within its budget.  This script runs the same comparisons (the
test module's own functions, imported, with the same assertions and
tolerances) on every point of each grid, and prints for each its worst
relative errors, its counts and its time; for the whole tables also each
branch of the comparison that the grid takes and how many of its settings
take it, next to the test's sample.  Run it after any change to
``calculator.js`` or to the package's calculator
(``attnscale.practice.calculator`` and what it calls).

Exit status 0 when every comparison holds, 1 when any fails (each failure
is printed and the other grids still run).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_calculator_page as page  # noqa: E402
from bookbuild import CHROMIUM_ARGS, load_extension  # noqa: E402


def tables(calculator) -> None:
    settings = page._settings(page.SETTINGS)
    result = page.compare_tables(calculator, settings)
    sample = page.compare_tables(calculator, [settings[k] for k in page.TABLE_SAMPLE])
    print(f"branches over the grid's {len(settings)} settings (in the test's {len(page.TABLE_SAMPLE)}):")
    for branch, count in sorted(result["branches"].items()):
        print(f"  {branch}: {count} ({sample['branches'].get(branch, 0)})")
    missing = set(result["branches"]) - set(sample["branches"])
    assert not missing, f"the test's sample misses branches of the grid: {sorted(missing)}"
    stale = page.TABLE_BRANCHES - set(result["branches"])
    assert not stale, f"TABLE_BRANCHES names branches the grid no longer takes: {sorted(stale)}"


def causal_cosine(calculator) -> None:
    page.compare_causal_cosine(calculator, page.causal_cosine_pairs(page.CAUSAL_COSINE_RANDOM))


def cosine_expectations(calculator) -> None:
    page.compare_cosine_expectations(calculator, page.COSINE_EXPECTATION_POINTS)


def cosine_solve(calculator) -> None:
    page.compare_cosine_solve(calculator, page.COSINE_SOLVE_TARGETS)


def cosine_rows(calculator) -> None:
    page.compare_cosine_rows(calculator, page.COSINE_ROW_SETTINGS)


def entropy_table(calculator) -> None:
    page.compare_entropy_table(calculator, range(page.ENTROPY_POINTS))


#: Each grid: the test that samples it, and the whole grid's comparison.
GRIDS = {
    "tables": ("test_page_agrees_with_the_package", tables),
    "causal_cosine": ("test_causal_cosine_matches_the_package", causal_cosine),
    "cosine_expectations": ("test_cosine_expectations_match_the_package", cosine_expectations),
    "cosine_solve": ("test_cosine_solve_matches_the_package", cosine_solve),
    "cosine_rows": ("test_cosine_rows_across_the_domain", cosine_rows),
    "entropy_table": ("test_entropy_table_matches_the_package", entropy_table),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grids", nargs="*", help=f"grids to run (default: all): {', '.join(GRIDS)}")
    names = parser.parse_args().grids or list(GRIDS)
    unknown = [name for name in names if name not in GRIDS]
    if unknown:
        parser.error(f"unknown grids {unknown}; the grids are {list(GRIDS)}")
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        print("Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    start = time.perf_counter()
    table = load_extension("calculator_table").build_table()
    print(f"the page's table: {time.perf_counter() - start:.1f} s")
    failed = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        calculator, requests = page.open_calculator(browser, table)
        for name in names:
            test, run = GRIDS[name]
            print(f"\n== {name} (the whole grid of {test})")
            start = time.perf_counter()
            try:
                run(calculator)
            except AssertionError:
                failed.append(name)
                traceback.print_exc()
            print(f"{name}: {'FAILED' if name in failed else 'holds'} in {time.perf_counter() - start:.1f} s")
        browser.close()
    if requests:
        print(f"the page made requests: {requests}")
        failed.append("requests")
    print(
        f"\n{len(names) - len(failed)} of {len(names)} grids hold" + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
