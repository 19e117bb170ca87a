"""One computation shared by the chapters of one build.

Two chapters sometimes make the same costly computation: the training
chapter and its evidence page train the same sweep of heads.  Each chapter
runs in a kernel of its own, so each would train it.  :func:`shared_result`
lets the first kernel of a build compute it and the others read it, while a
chapter run on its own (in Jupyter, without the variable) computes it
itself.  The tests' reruns of the chapters share a folder of their own.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from pathlib import Path

__all__ = ["SHARED_RESULTS", "shared_result"]

#: The environment variable naming the folder of shared results.  The book
#: build sets it to ``_build/.shared-results`` (book/_ext/parallel_chapters.py);
#: unset or empty, :func:`shared_result` just computes.
SHARED_RESULTS = "ATTNSCALE_SHARED_RESULTS"

_PACKAGE = Path(__file__).resolve().parents[1]


def _source_digest() -> str:
    """SHA-256 of every Python file of the package: a result is only reused by the same code."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(_PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def shared_result(compute, /, **arguments):
    """``compute(**arguments)``, computed once per build and read by the other chapters.

    The result is stored under the folder named by ``ATTNSCALE_SHARED_RESULTS``,
    keyed by the function's qualified name, its pickled arguments and a digest
    of the package's source, so a result made by other code or other
    arguments is never read.  A file lock makes a second kernel that asks
    while the first computes wait for it, then read.  If the computation
    raises, nothing is stored and the error propagates.

    Parameters
    ----------
    compute : callable
        A function of the package (it must be importable by name, so that
        its source is in the digest), called with ``arguments``.
    **arguments
        Its keyword arguments; they must pickle.

    Returns
    -------
    object
        What ``compute`` returns (it must pickle).

    Examples
    --------
    Without the variable it is a plain call:

    >>> import os
    >>> from attnscale.support.shared import SHARED_RESULTS, shared_result
    >>> _ = os.environ.pop(SHARED_RESULTS, None)
    >>> shared_result(dict, steps=100, seeds=5)
    {'steps': 100, 'seeds': 5}
    """
    if not callable(compute):
        raise TypeError(f"compute must be callable, got {type(compute).__name__}")
    folder = os.environ.get(SHARED_RESULTS, "")
    if not folder:
        return compute(**arguments)
    key = hashlib.sha256()
    name = f"{getattr(compute, '__module__', '')}.{getattr(compute, '__qualname__', repr(compute))}"
    key.update(name.encode())
    key.update(pickle.dumps(arguments, protocol=5))
    key.update(_source_digest().encode())
    stem = Path(folder) / f"{getattr(compute, '__name__', 'result')}-{key.hexdigest()[:24]}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    stored = stem.with_suffix(".pickle")
    with open(stem.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second kernel waits here while the first computes
        try:
            if stored.exists():
                return pickle.loads(stored.read_bytes())
            result = compute(**arguments)
            partial = stem.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(result, protocol=5))
            os.replace(partial, stored)
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
