"""Argument checks shared by every public function of :mod:`attnscale`.

Each check raises a :class:`TypeError` (the wrong kind of value) or a
:class:`ValueError` (a value outside the domain) whose message names the
argument and the allowed range.  The array checks return a float64 NumPy
array; :func:`count` and :func:`seed` a Python ``int``, :func:`choice` the
string, :func:`positive_number` and :func:`nonnegative_number` a ``float``.  The
numerical code behind the checks can then assume clean input and never
returns a silent NaN.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "at_least",
    "choice",
    "count",
    "dimension",
    "generator",
    "key_count",
    "nonnegative_number",
    "positive_number",
    "real_array",
    "scale",
    "scores",
    "seed",
    "spike_and_bulk",
]


def real_array(value, name: str) -> np.ndarray:
    """Return ``value`` as a finite float64 array, or raise.

    Booleans, strings, complex numbers and objects are refused with a
    :class:`TypeError`; NaN and infinities with a :class:`ValueError`.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a real number or array of real numbers, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except Exception as exc:  # ragged sequences and the like
        raise TypeError(f"{name} must be a real number or array of real numbers: {exc}") from None
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    if array.size and not np.all(np.isfinite(array)):
        bad = array[~np.isfinite(array)].flat[0]
        raise ValueError(f"{name} must be finite, got {bad}")
    return array


def at_least(value, name: str, lower: float, *, what: str = "") -> np.ndarray:
    """A finite, non-empty real array whose entries are all ``>= lower``."""
    array = real_array(value, name)
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(array < lower):
        bad = array[array < lower].flat[0]
        rule = f"{name} must be >= {lower:g}{what}"
        raise ValueError(f"{rule}, got {bad:g}")
    return array


def scores(value, name: str = "s") -> np.ndarray:
    """Attention scores: a finite, non-empty array with at least one axis."""
    array = real_array(value, name)
    if array.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (the keys), got a scalar")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    return array


def scale(value, name: str = "alpha") -> np.ndarray:
    """A softmax scale (inverse temperature): finite and ``>= 0``."""
    return at_least(value, name, 0.0)


def key_count(value, name: str = "n") -> np.ndarray:
    """A number of keys: finite and ``>= 2`` (real values are allowed)."""
    return at_least(value, name, 2.0, what=" (at least two keys)")


def dimension(value, name: str = "d") -> np.ndarray:
    """A head dimension: finite and ``>= 2``."""
    return at_least(value, name, 2.0, what=" (the head dimension)")


def count(value, name: str, lower: int = 1) -> int:
    """An integer (not a bool) ``>= lower``, returned as a Python ``int``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < lower:
        raise ValueError(f"{name} must be >= {lower}, got {value}")
    return int(value)


def seed(value, name: str = "seed") -> int:
    """A random seed: a non-negative integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise TypeError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def choice(value, name: str, allowed) -> str:
    """One of the strings ``allowed`` (a :class:`TypeError` for a non-string)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {allowed}, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _single_number(value, name: str) -> np.ndarray:
    array = real_array(value, name)
    if array.ndim != 0:
        raise ValueError(f"{name} must be a single number, got shape {array.shape}")
    return array


def positive_number(value, name: str) -> float:
    """A single finite number ``> 0``, returned as a Python ``float``."""
    array = _single_number(value, name)
    if not array > 0:
        raise ValueError(f"{name} must be > 0, got {float(array):g}")
    return float(array)


def nonnegative_number(value, name: str) -> float:
    """A single finite number ``>= 0``, returned as a Python ``float``."""
    array = _single_number(value, name)
    if not array >= 0:
        raise ValueError(f"{name} must be >= 0, got {float(array):g}")
    return float(array)


def generator(rng, name: str = "rng") -> np.random.Generator:
    """A :class:`numpy.random.Generator` (seed it for reproducible numbers)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def spike_and_bulk(spike, bulk_mean, bulk_sd, spike_name: str = "spike"):
    """A row model's per-row spike (or target) logit, bulk mean and bulk spread.

    Finite, non-empty arrays, ``bulk_sd >= 0``, that broadcast together;
    returns the three arrays and their broadcast shape.
    """
    names = (spike_name, "bulk_mean", "bulk_sd")
    spike, bulk_mean, bulk_sd = (
        real_array(v, name) for v, name in zip((spike, bulk_mean, bulk_sd), names, strict=True)
    )
    for name, array in zip(names, (spike, bulk_mean, bulk_sd), strict=True):
        if array.size == 0:
            raise ValueError(f"{name} must not be empty")
    if np.any(bulk_sd < 0):
        raise ValueError(f"bulk_sd must be >= 0, got {bulk_sd[bulk_sd < 0].flat[0]:g}")
    try:
        shape = np.broadcast_shapes(spike.shape, bulk_mean.shape, bulk_sd.shape)
    except ValueError:
        raise ValueError(
            f"{spike_name}, bulk_mean and bulk_sd must broadcast together, got shapes "
            f"{spike.shape}, {bulk_mean.shape} and {bulk_sd.shape}"
        ) from None
    return spike, bulk_mean, bulk_sd, shape
