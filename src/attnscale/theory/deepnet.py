r"""Deep random networks at initialization: second moments layer by layer.

Chapter *Initialization*.  A batch of standard normal inputs is pushed
through ``depth`` random layers of width ``width``; a standard normal
upstream gradient is pushed back.  The mean square of the activations and
of the gradients is recorded at every layer.  Everything is plain NumPy
with seeded randomness.

Architectures (:data:`ARCHITECTURES`):

``plain-naive``, ``plain-xavier``, ``plain-he``
    :math:`x_{l+1} = \operatorname{relu}(W_l x_l)` with weight standard
    deviation 1, :math:`\sqrt{1/m}` (Xavier for a square layer) and
    :math:`\sqrt{2/m}` (He).
``residual``
    :math:`x_{l+1} = x_l + F_l(x_l)` without normalization.
``post-norm``
    :math:`x_{l+1} = \operatorname{RMSNorm}(x_l + F_l(x_l))`.
``pre-norm``
    :math:`x_{l+1} = x_l + F_l(\operatorname{RMSNorm}(x_l))`.
``rezero``
    :math:`x_{l+1} = x_l + a_l F_l(x_l)` with :math:`a_l = 0` at initialization
    (ReZero, Bachlechner et al., 2021); ``branch_scale`` sets
    another :math:`a`.
``skipinit``
    :math:`x_{l+1} = x_l + F_l(x_l)/\sqrt L`, SkipInit's small constant
    initialization of the branch multiplier (De and Smith, 2020).
``fixup``
    :math:`x_{l+1} = x_l + V_l\operatorname{relu}(U_l x_l)` with
    :math:`V_l = 0` and :math:`U_l` He-scaled times :math:`L^{-1/(2k-2)} =
    L^{-1/2}` for :math:`k = 2` layers per branch (Fixup, Zhang et al., 2019).

The residual branch is :math:`F(x) = V\operatorname{relu}(Ux)` with He-scaled
:math:`U` and Xavier-scaled :math:`V`, so that it preserves the second moment
of its input.

:func:`log_growth_law` gives the exact law of the growth of *one input's*
squared norm through one plain layer or one residual block, against which
the simulations are checked.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import linalg, special

from ..support import _validate

__all__ = ["ARCHITECTURES", "activation_second_moments", "layer_second_moments", "log_growth_law"]

ARCHITECTURES = (
    "plain-naive",
    "plain-xavier",
    "plain-he",
    "residual",
    "post-norm",
    "pre-norm",
    "rezero",
    "skipinit",
    "fixup",
)


def _rms_norm(x):
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True))
    return x / rms, rms


def _rms_norm_backward(grad_y, y, rms):
    """Gradient through y = x / rms(x): (g - y mean(g y)) / rms."""
    return (grad_y - y * np.mean(grad_y * y, axis=-1, keepdims=True)) / rms


def _build(architecture, depth, width, rng):
    """Random weights of every layer."""
    plain_std = {"plain-naive": 1.0, "plain-xavier": np.sqrt(1.0 / width), "plain-he": np.sqrt(2.0 / width)}
    if architecture in plain_std:
        return [plain_std[architecture] * rng.standard_normal((width, width)) for _ in range(depth)]
    u_std = np.sqrt(2.0 / width) * (depth**-0.5 if architecture == "fixup" else 1.0)
    v_std = 0.0 if architecture == "fixup" else np.sqrt(1.0 / width)
    return [
        (
            u_std * rng.standard_normal((width, width)),
            v_std * rng.standard_normal((width, width)),
        )
        for _ in range(depth)
    ]


def _forward(architecture, weights, x, branch_scale):
    """Activations of every layer and what the backward pass needs."""
    activations, cache = [x], []
    for layer in weights:
        if architecture.startswith("plain"):
            h = x @ layer
            cache.append(h)
            x = np.maximum(h, 0.0)
        else:
            u, v = layer
            branch_in, rms_in = _rms_norm(x) if architecture == "pre-norm" else (x, None)
            hidden = branch_in @ u
            gain = {"rezero": branch_scale, "skipinit": len(weights) ** -0.5}.get(architecture, 1.0)
            total = x + gain * (np.maximum(hidden, 0.0) @ v)
            x, rms_out = _rms_norm(total) if architecture == "post-norm" else (total, None)
            cache.append((hidden, branch_in, rms_in, x, rms_out, gain))
        activations.append(x)
    return activations, cache


def _backward(architecture, weights, cache, grad, through_branches=True):
    """Gradients with respect to every layer's input, last layer first.

    With ``through_branches=False`` only the identity path of a residual
    stack is followed (the branches' contribution is dropped).
    """
    grads = [grad]
    for layer, entry in zip(reversed(weights), reversed(cache), strict=True):
        if architecture.startswith("plain"):
            grad = (grad * (entry > 0)) @ layer.T
        else:
            u, v = layer
            hidden, branch_in, rms_in, out, rms_out, gain = entry
            if architecture == "post-norm":
                grad = _rms_norm_backward(grad, out, rms_out)
            through_branch = ((gain * grad @ v.T) * (hidden > 0)) @ u.T
            if architecture == "pre-norm":
                through_branch = _rms_norm_backward(through_branch, branch_in, rms_in)
            grad = grad + through_branch if through_branches else grad
        grads.append(grad)
    return grads[::-1]


def layer_second_moments(
    architecture,
    depth,
    width,
    rng,
    samples=64,
    branch_scale=0.0,
    through_branches=True,
    gradients=True,
    per_sample=False,
):
    r"""Mean squares of activations and gradients at every layer of a random network.

    Parameters
    ----------
    architecture : str
        One of :data:`ARCHITECTURES`.
    depth : int
        Number of layers, ``>= 1``.
    width : int
        Units per layer, ``>= 2``.
    rng : numpy.random.Generator
        Source of randomness (weights, inputs, upstream gradient).
    samples : int, optional
        Batch size.
    branch_scale : float or 1-D array_like, optional
        For ``rezero``: the value :math:`a_l` of every branch factor (0 at
        initialization; a warm-up raises it towards 1 during training).  An
        array evaluates the *same* network (weights, inputs, upstream
        gradient) at each value, at the cost of one set of random draws.
    through_branches : bool, optional
        If False, the backward pass follows only the identity path of a
        residual stack (through the norms of ``post-norm``), which measures
        how much of the output gradient reaches layer :math:`l` directly.
    gradients : bool, optional
        If False, skip the backward pass (``backward`` is None).  The random
        draws are the same either way, so the forward moments and the
        generator's state after the call do not depend on it.
    per_sample : bool, optional
        If True, the mean squares are taken over the units of each input
        separately (a trailing axis of length ``samples``), not over the
        batch: :math:`\lVert x_l\rVert^2/m` for every input.  The random draws
        are the same either way.

    Returns
    -------
    forward : numpy.ndarray
        ``forward[l]`` is :math:`\mathbb E[x_l^2]`, for :math:`l = 0 \dots` ``depth``
        (``forward[k, l]`` for the ``k``-th of an array of ``branch_scale``;
        ``forward[..., l, b]`` for input ``b`` with ``per_sample``).
    backward : numpy.ndarray
        ``backward[l]`` is the mean square of :math:`\partial \mathcal L / \partial x_l` for
        a loss whose gradient at the output is standard normal (same shape
        as ``forward``).
    """
    architecture = _validate.choice(architecture, "architecture", ARCHITECTURES)
    depth, width = _validate.count(depth, "depth"), _validate.count(width, "width", 2)
    samples = _validate.count(samples, "samples")
    branch_scale = _validate.real_array(branch_scale, "branch_scale")
    if branch_scale.ndim > 1:
        raise ValueError(f"branch_scale must be a number or a 1-D array, got shape {branch_scale.shape}")
    for flag, name in (
        (through_branches, "through_branches"),
        (gradients, "gradients"),
        (per_sample, "per_sample"),
    ):
        if not isinstance(flag, bool | np.bool_):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    weights = _build(architecture, depth, width, rng)
    # one leading axis per branch scale (length 1 for a number)
    gains = branch_scale.reshape(-1, 1, 1)
    x = np.broadcast_to(rng.standard_normal((samples, width)), (gains.shape[0], samples, width))
    activations, cache = _forward(architecture, weights, x, gains)
    upstream = rng.standard_normal((samples, width))  # drawn either way: the same stream
    axes = -1 if per_sample else (-2, -1)
    shape = gains.shape[:1] + ((samples,) if per_sample else ())

    def moments(arrays):  # (branch scales, layers[, samples])
        squares = [np.broadcast_to(np.mean(a * a, axis=axes), shape) for a in arrays]
        return np.moveaxis(np.array(squares), 0, 1)

    forward = moments(activations)
    if not gradients:
        return (forward[0] if branch_scale.ndim == 0 else forward), None
    backward = moments(_backward(architecture, weights, cache, upstream, bool(through_branches)))
    if branch_scale.ndim == 0:
        return forward[0], backward[0]
    return forward, backward


def activation_second_moments(activation, depth, width, rng, weight_std=None, samples=64):
    r"""Forward second moments of a plain network with any activation.

    :math:`x_{l+1} = f(W_l x_l)` with weights of standard deviation
    ``weight_std`` (default :math:`\sqrt{1/m}`, which keeps
    :math:`\mathbb E[h^2] = \mathbb E[x^2]` before the activation).

    Parameters
    ----------
    activation : callable
        Vectorized activation :math:`f`.
    depth, width : int
        Layers (``>= 1``) and units (``>= 2``).
    rng : numpy.random.Generator
        Source of randomness.
    weight_std : float, optional
        Standard deviation of the weights.
    samples : int, optional
        Batch size.

    Returns
    -------
    numpy.ndarray
        :math:`\mathbb E[x_l^2]` for :math:`l = 0 \dots` ``depth``.
    """
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")
    depth, width = _validate.count(depth, "depth"), _validate.count(width, "width", 2)
    samples = _validate.count(samples, "samples")
    std = np.sqrt(1.0 / width) if weight_std is None else float(_validate.scale(weight_std, "weight_std"))
    x = rng.standard_normal((samples, width))
    moments = [np.mean(x * x)]
    for _ in range(depth):
        x = activation(x @ (std * rng.standard_normal((width, width))))
        moments.append(np.mean(x * x))
    return np.array(moments)


_PLAIN_STD2 = {"plain-naive": lambda m: 1.0, "plain-xavier": lambda m: 1.0 / m, "plain-he": lambda m: 2.0 / m}


def _active_counts(width):
    """K ~ Binomial(m, 1/2), the number of active ReLUs: values and probabilities above 1e-18."""
    k = np.arange(width + 1)
    from scipy import stats  # here: scipy.stats is slow to import, and only this needs it

    p = stats.binom.pmf(k, width, 0.5)
    keep = p > 1e-18 * p.max()
    return k[keep], p[keep]


@functools.lru_cache(maxsize=4096)
def _gamma_rule(shape, nodes):
    """Gauss rule for E[f(U)], U ~ Gamma(shape, 1): nodes and weights summing to 1.

    Golub--Welsch on the generalized Laguerre recurrence, so that large
    shapes (wide layers) neither overflow nor lose the normalization.
    Cached: the same shapes recur for every gain.
    """
    k = np.arange(nodes)
    off = np.sqrt(k[1:] * (k[1:] + shape - 1.0))
    values, vectors = linalg.eigh_tridiagonal(2.0 * k + shape, off)
    values.flags.writeable = False
    weights = vectors[0] ** 2
    weights.flags.writeable = False
    return values, weights


def _block_expectation(width, gain, functions, nodes=32):
    r"""E[f(R)] for R = |x + a V relu(U x)|^2 / |x|^2, one input, for each f in ``functions``.

    Conditioned on the number K of active ReLUs and on S = chi^2_K (the
    hidden layer's squared norm in units of 2|x|^2/m), R = (1 + t g_1)^2 + t^2 C
    with t^2 = 2 a^2 S / m^2, g_1 ~ N(0, 1) and C ~ chi^2_{m-1} independent.
    Gauss quadrature in S and C (Gamma laws) and g_1 (Hermite); a sum over K.
    """
    m = width
    k_values, k_prob = _active_counts(m)
    g1, w_g1 = special.roots_hermitenorm(2 * nodes)
    w_g1 = w_g1 / np.sqrt(2.0 * np.pi)
    v, w_c = _gamma_rule((m - 1) / 2.0, nodes)
    c_sq = 2.0 * v
    totals = [0.0] * len(functions)
    for k, pk in zip(k_values, k_prob, strict=True):
        if k == 0:  # no active unit: the branch is 0 and R = 1
            for i, f in enumerate(functions):
                totals[i] += pk * f(np.float64(1.0))
            continue
        u, w_s = _gamma_rule(k / 2.0, nodes)
        t_sq = 2.0 * gain**2 * (2.0 * u) / m**2
        t = np.sqrt(t_sq)[:, None, None]
        ratio = (1.0 + t * g1[None, :, None]) ** 2 + t_sq[:, None, None] * c_sq[None, None, :]
        weights = w_s[:, None, None] * w_g1[None, :, None] * w_c[None, None, :]
        for i, f in enumerate(functions):
            totals[i] += pk * np.sum(weights * f(ratio))
    return totals


def log_growth_law(architecture, width, branch_scale=1.0):
    r"""Exact mean and variance of the log growth of one input through one layer.

    For a single input :math:`x_l` and fresh Gaussian weights, the ratio
    :math:`R = \lVert x_{l+1}\rVert^2/\lVert x_l\rVert^2` does not depend on
    :math:`x_l` (rotational invariance), so over :math:`L` layers
    :math:`\log(\lVert x_L\rVert^2/\lVert x_0\rVert^2)` is a sum of :math:`L`
    independent copies of :math:`\log R`: its mean and variance are
    :math:`L` times the ones returned here.  With :math:`K \sim
    \operatorname{Binomial}(m, \frac12)` active ReLUs:

    ``plain-naive``, ``plain-xavier``, ``plain-he``
        :math:`R = \sigma^2\chi^2_K`, so :math:`\mathbb E\log R = \log\sigma^2 +
        \mathbb E[\psi(K/2)] + \log 2` and :math:`\operatorname{Var}\log R =
        \mathbb E[\psi'(K/2)] + \operatorname{Var}\psi(K/2)` (given :math:`K \ge 1`;
        :math:`K = 0`, probability :math:`2^{-m}`, sends the input to 0).
    ``residual``, ``rezero``
        The block :math:`x + a V\operatorname{relu}(Ux)` (``residual``: :math:`a = 1`;
        ``rezero``: :math:`a` = ``branch_scale``):
        :math:`R = (1 + t g_1)^2 + t^2 C` with :math:`t^2 = 2a^2 S/m^2`,
        :math:`S \sim \chi^2_K`, :math:`g_1 \sim \mathcal N(0, 1)`,
        :math:`C \sim \chi^2_{m-1}`; :math:`\mathbb E R = 1 + a^2` exactly, and the
        expectations of :math:`\log R` are computed by Gauss quadrature
        (relative accuracy about 1e-12 for :math:`m \ge 32`; for very narrow
        layers with a large gain the integrand nears a singularity and the
        accuracy drops, to about 1e-6 at :math:`m = 8`, :math:`a \ge 1`).

    Parameters
    ----------
    architecture : str
        One of the architectures above (see :data:`ARCHITECTURES`).
    width : int
        Units per layer :math:`m`, ``>= 2``.
    branch_scale : float or array_like, optional
        :math:`a \ge 0` for ``rezero`` (ignored otherwise).

    Returns
    -------
    mean, variance : float or numpy.ndarray
        Of :math:`\log R` for one layer (arrays shaped like ``branch_scale``
        for ``rezero``).

    See Also
    --------
    layer_second_moments : the simulations it checks.

    Examples
    --------
    He keeps :math:`\mathbb E R = 1`, and :math:`\mathbb E \log R` is a little
    below 0; Xavier on a square layer halves :math:`\mathbb E R` (mean near
    :math:`\log\frac12`):

    >>> from attnscale import log_growth_law
    >>> [round(v, 4) for v in log_growth_law("plain-he", 256)]
    [-0.0098, 0.0198]
    >>> round(log_growth_law("plain-xavier", 256)[0], 4)
    -0.703

    A residual block doubles :math:`\mathbb E R`, and :math:`\mathbb E \log R < \log 2`:

    >>> round(log_growth_law("residual", 64)[0], 4)
    0.672
    """
    width = _validate.count(width, "width", 2)
    if architecture in _PLAIN_STD2:
        k_values, k_prob = _active_counts(width)
        k_prob, k_values = k_prob[k_values > 0], k_values[k_values > 0]
        k_prob = k_prob / k_prob.sum()
        given_k = special.digamma(k_values / 2.0) + np.log(2.0) + np.log(_PLAIN_STD2[architecture](width))
        mean = float(np.sum(k_prob * given_k))
        variance = float(np.sum(k_prob * (special.polygamma(1, k_values / 2.0) + (given_k - mean) ** 2)))
        return mean, variance
    if architecture not in ("residual", "rezero"):
        raise ValueError(
            "log_growth_law covers plain-naive, plain-xavier, plain-he, residual and rezero, "
            f"got {architecture!r}"
        )
    gains = _validate.scale(1.0 if architecture == "residual" else branch_scale, "branch_scale")
    means, variances = np.empty(gains.shape), np.empty(gains.shape)
    for idx in np.ndindex(gains.shape):
        first, second = _block_expectation(width, float(gains[idx]), (np.log, lambda r: np.log(r) ** 2))
        means[idx], variances[idx] = first, max(second - first**2, 0.0)
    if gains.ndim == 0:
        return float(means), float(variances)
    return means, variances
