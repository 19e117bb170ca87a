"""Checks that the book's chapters run, with failure messages a reader can act on.

A chapter's numerical check compares two independent routes to the same
number.  When it fails, the build log must say *which* check failed and
*which* two values disagreed; a bare ``assert`` says neither.  These helpers
raise :class:`AssertionError` with that information, and return the largest
discrepancy when they pass so the chapter can quote it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CheckFailed", "check_close", "check_true"]


class CheckFailed(AssertionError):
    """A chapter check disagreed; the message names the check and both values."""


def check_close(actual, desired, *, check: str, rtol: float = 1e-12, atol: float = 0.0) -> float:
    """Assert ``|actual - desired| <= atol + rtol * |desired|`` elementwise.

    Parameters
    ----------
    actual, desired : array_like
        The two routes, broadcastable to a common shape; NaN never passes.
    check : str
        What is being compared, e.g. ``"Jacobian vs finite differences"``.
    rtol, atol : float
        Tolerances, as in ``numpy.isclose`` but with no tolerance by default
        other than ``rtol=1e-12``.

    Returns
    -------
    float
        The largest relative discrepancy ``|actual - desired| / max(|desired|, tiny)``.

    Raises
    ------
    CheckFailed
        With the check's name, the worst index, both values there and the
        tolerances.
    """
    a, b = np.broadcast_arrays(np.asarray(actual, dtype=float), np.asarray(desired, dtype=float))
    err = np.abs(a - b)
    allowed = atol + rtol * np.abs(b)
    bad = ~(err <= allowed)  # a NaN on either side never passes
    rel = err / np.maximum(np.abs(b), np.finfo(float).tiny)
    if np.any(bad):
        worst = int(np.argmax(np.where(bad.ravel(), np.nan_to_num(rel.ravel(), nan=np.inf), -1.0)))
        where = f" at index {tuple(int(i) for i in np.unravel_index(worst, a.shape))}" if a.ndim else ""
        got, want = float(a.ravel()[worst]), float(b.ravel()[worst])
        raise CheckFailed(
            f"check failed: {check}{where}: got {got!r}, expected {want!r} "
            f"(|difference| {err.ravel()[worst]:.3e} > allowed {allowed.ravel()[worst]:.3e}; "
            f"rtol={rtol:g}, atol={atol:g}; {int(bad.sum())} of {a.size} values outside)"
        )
    return float(np.max(rel)) if rel.size else 0.0


def check_true(condition, *, check: str, detail: str = "") -> None:
    """Assert that every element of ``condition`` holds, naming the check if not."""
    cond = np.asarray(condition, dtype=bool)
    if not np.all(cond):
        extra = f": {detail}" if detail else ""
        raise CheckFailed(f"check failed: {check}{extra} ({int((~cond).sum())} of {cond.size} false)")
