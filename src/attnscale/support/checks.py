"""Checks that the book's chapters run, with failure messages a reader can act on.

A chapter's numerical check compares two independent routes to the same
number, and names the *wrong claim* it rules out: a competing value, the
formula with one term dropped, a factor of two, the null hypothesis.  A check
whose tolerance would also let that wrong claim through cannot tell the two
apart; it fails the build with :class:`CheckCannotDiscriminate`, just as a
disagreement between the routes fails it with :class:`CheckFailed`.

Three forms: :func:`check_close` (two routes to one number),
:func:`check_holds` (a claim about a computed value, also evaluated on each
competing value, so the claim itself is what separates them) and
:func:`check_true` (a bare condition, for checks exempt from alternatives).

Every call states either ``rules_out=`` (the alternatives) or ``exempt=``
(why no alternative exists, e.g. a theorem checked to rounding error where
any other value is a different theorem).  ``tests/test_checks_audit.py``
walks every chapter and fails on a check with neither.

When they fail, the messages name the check, the worst index and both values;
a bare ``assert`` says none of that.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["CheckCannotDiscriminate", "CheckFailed", "check_close", "check_holds", "check_true"]


class CheckFailed(AssertionError):
    """A chapter check disagreed; the message names the check and both values."""


class CheckCannotDiscriminate(CheckFailed):
    """A check's tolerance would also accept the wrong claim it says it rules out."""


def _alternatives(rules_out, exempt, check):
    if exempt is not None:
        if not isinstance(exempt, str) or not exempt.strip():
            raise TypeError(f"{check}: exempt must be a non-empty string saying why no alternative exists")
        if rules_out is not None:
            raise TypeError(f"{check}: give either rules_out or exempt, not both")
        return {}
    if rules_out is None:
        return {}
    if not isinstance(rules_out, Mapping) or not rules_out:
        raise TypeError(
            f"{check}: rules_out must be a non-empty mapping {{short name of the wrong claim: its value}}"
        )
    for name in rules_out:
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"{check}: every key of rules_out must be a non-empty string naming the claim")
    return dict(rules_out)


def _fmt(tolerance):
    """A tolerance for a message: a number, or the range of an array of them."""
    arr = np.asarray(tolerance, dtype=float)
    if arr.ndim == 0 or arr.size == 1:
        return f"{float(arr.ravel()[0]):g}"
    return f"{float(arr.min()):g}..{float(arr.max()):g}"


def _compare(actual, desired, rtol, atol):
    a, b = np.broadcast_arrays(np.asarray(actual, dtype=float), np.asarray(desired, dtype=float))
    # desired may be 0 or infinite; a NaN on either side never passes
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        err = np.abs(a - b)
        allowed = atol + rtol * np.abs(b)
        bad = ~(err <= allowed)
        rel = err / np.maximum(np.abs(b), np.finfo(float).tiny)
    return a, b, err, allowed, bad, rel


def check_close(
    actual,
    desired,
    *,
    check: str,
    rtol: float = 1e-12,
    atol: float = 0.0,
    rules_out: Mapping[str, object] | None = None,
    exempt: str | None = None,
) -> float:
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
    rules_out : mapping of str to array_like, optional
        The wrong claims this check rules out, each by a short name and the
        value the claim predicts in place of ``desired``.  If ``actual`` is
        within the same tolerance of *every* element of an alternative, the
        check cannot tell the two claims apart and
        :class:`CheckCannotDiscriminate` is raised.
    exempt : str, optional
        Instead of ``rules_out``: why no competing value exists.

    Returns
    -------
    float
        The largest relative discrepancy ``|actual - desired| / max(|desired|, tiny)``.

    Raises
    ------
    CheckFailed
        With the check's name, the worst index, both values there and the
        tolerances.
    CheckCannotDiscriminate
        When an alternative in ``rules_out`` passes the same tolerance.

    See Also
    --------
    check_true : a claim that is a condition, not a value.
    check_holds : a claim tested by a function of the value.

    Examples
    --------
    A check passes, and returns how close the routes came; a wrong claim
    within the tolerance makes it refuse to pass:

    >>> import numpy as np
    >>> import attnscale as at
    >>> at.check_close(np.sqrt(2.0) ** 2, 2.0, check="sqrt(2) squared", rtol=1e-15, rules_out={"3/2": 1.5})
    2.220446049250313e-16
    >>> at.check_close(2.0, 2.0, check="two", rtol=0.5, rules_out={"3/2": 1.5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    attnscale.support.checks.CheckCannotDiscriminate: check cannot discriminate: two: ...
    """
    alternatives = _alternatives(rules_out, exempt, check)
    a, b, err, allowed, bad, rel = _compare(actual, desired, rtol, atol)
    if np.any(bad):
        worst = int(np.argmax(np.where(bad.ravel(), np.nan_to_num(rel.ravel(), nan=np.inf), -1.0)))
        where = f" at index {tuple(int(i) for i in np.unravel_index(worst, a.shape))}" if a.ndim else ""
        got, want = float(a.ravel()[worst]), float(b.ravel()[worst])
        raise CheckFailed(
            f"check failed: {check}{where}: got {got!r}, expected {want!r} "
            f"(|difference| {err.ravel()[worst]:.3e} > allowed {allowed.ravel()[worst]:.3e}; "
            f"rtol={_fmt(rtol)}, atol={_fmt(atol)}; {int(bad.sum())} of {a.size} values outside)"
        )
    for name, value in alternatives.items():
        *_, alt_bad, alt_rel = _compare(actual, value, rtol, atol)
        if not np.any(alt_bad):
            raise CheckCannotDiscriminate(
                f"check cannot discriminate: {check}: the wrong claim '{name}' also passes "
                f"(rtol={_fmt(rtol)}, atol={_fmt(atol)}; largest relative distance to it "
                f"{float(np.max(alt_rel)) if alt_rel.size else 0.0:.3e}); tighten the tolerance or "
                "compare a quantity that separates the claims"
            )
    return float(np.max(rel)) if rel.size else 0.0


def check_true(
    condition,
    *,
    check: str,
    detail: str = "",
    rules_out: Mapping[str, object] | None = None,
    exempt: str | None = None,
) -> None:
    """Assert that every element of ``condition`` holds, naming the check if not.

    Parameters
    ----------
    condition : array_like of bool
        The claim, evaluated on the computed values.
    check, detail : str
        What is being checked, and optional context for the message.
    rules_out : mapping of str to array_like of bool, optional
        The same condition evaluated with each wrong claim's value in place
        of the computed one.  If it also holds everywhere, the condition does
        not separate the claims and :class:`CheckCannotDiscriminate` is raised.
    exempt : str, optional
        Instead of ``rules_out``: why no competing claim exists.

    See Also
    --------
    check_close : a claim that is a value, to a tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> from attnscale import check_true
    >>> weights = np.array([0.2, 0.3, 0.5])
    >>> check_true(weights > 0, check="weights are positive", rules_out={"one weight is 0": weights > 0.25})
    """
    alternatives = _alternatives(rules_out, exempt, check)
    _require(np.asarray(condition, dtype=bool), check, detail)
    for name, alt in alternatives.items():
        if np.all(np.asarray(alt, dtype=bool)):
            raise CheckCannotDiscriminate(
                f"check cannot discriminate: {check}: the condition also holds under the wrong claim '{name}'"
            )


def check_holds(
    claim,
    value,
    *,
    check: str,
    detail: str = "",
    rules_out: Mapping[str, object] | None = None,
    exempt: str | None = None,
) -> None:
    """Assert that ``claim(value)`` holds everywhere, and fails for every competing value.

    The same ``claim`` is applied to the computed ``value`` and to each wrong
    claim's value, so an alternative cannot be a different, hand-written
    condition that is false by algebra: it is a value the wrong claim
    predicts, judged by the same test.

    Parameters
    ----------
    claim : callable
        ``value -> array_like of bool`` (or a list of them); the statement
        checked, e.g. ``lambda g: np.diff(g) > 0`` for "increases".
    value : object
        What the chapter computed.
    check, detail : str
        What is being checked, and optional context for the message.
    rules_out : mapping of str to object, optional
        Each wrong claim, by a short name and the value it predicts in place
        of ``value``.  If ``claim`` also holds everywhere on one of them, the
        check cannot tell the claims apart: :class:`CheckCannotDiscriminate`.
    exempt : str, optional
        Instead of ``rules_out``: why no competing value exists.

    Examples
    --------
    >>> import numpy as np
    >>> check_holds(lambda g: np.diff(g) > 0, np.array([1.0, 2.0, 3.0]),
    ...             check="increases", rules_out={"peaks": np.array([1.0, 3.0, 2.0])})
    """
    if not callable(claim):
        raise TypeError(f"{check}: claim must be callable (value -> booleans), got {type(claim).__name__}")
    alternatives = _alternatives(rules_out, exempt, check)
    _require(_booleans(claim(value)), check, detail)
    for name, alt in alternatives.items():
        if np.all(_booleans(claim(alt))):
            raise CheckCannotDiscriminate(
                f"check cannot discriminate: {check}: "
                f"the claim also holds for the wrong claim's value '{name}'"
            )


def _require(cond, check, detail):
    """Raise :class:`CheckFailed`, naming the check, unless every element of ``cond`` holds."""
    if not np.all(cond):
        extra = f": {detail}" if detail else ""
        raise CheckFailed(f"check failed: {check}{extra} ({int((~cond).sum())} of {cond.size} false)")


def _booleans(result):
    """A claim's result as one flat boolean array (a list of arrays is concatenated)."""
    if isinstance(result, list | tuple):
        parts = [np.asarray(r, dtype=bool).ravel() for r in result]
        return np.concatenate(parts) if parts else np.ones(0, dtype=bool)
    return np.asarray(result, dtype=bool).ravel()
