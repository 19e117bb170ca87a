"""What a practitioner uses: the book's answers (:mod:`~attnscale.practice.advice`,
the one source of truth for what it recommends), the scale calculator (whose
JavaScript port is ``book/_static/calculator.js``, held equal to it by
``tests/test_calculator_page.py`` and ``tests/test_calculator_fuzz.py``),
the published length rules, recipes, and the numbers the sources report.

The top layer: may import :mod:`attnscale.models`, :mod:`attnscale.theory`
and :mod:`attnscale.support`; nothing in the package imports it except the
package's front door (``attnscale/__init__.py``) and ``__main__``.
"""
