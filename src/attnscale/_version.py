"""The version of the book and of its package: the one place it is set.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``), the book shows
it (``book/_ext/book_release.py``: page footer, "How to cite", the PDF's
title page), and ``tests/test_release.py`` checks that ``CITATION.cff``,
``.zenodo.json``, ``CHANGELOG.md`` and the README's BibTeX say the same.
"""

__version__ = "0.2.0"
