r"""Second moments of initializations and activations.

Chapter *Initialization*.  The principle: choose weights so that the second
moment :math:`\mathbb E[x^2]` of the activations is the same in every layer.
For :math:`y = Wx` with independent weights of mean 0 and variance
:math:`\sigma^2`, :math:`\mathbb E[y_i^2] = m\,\sigma^2\,\mathbb E[x^2]` with
:math:`m` the fan-in, which fixes :math:`\sigma^2`; an activation :math:`f`
multiplies the second moment by :math:`\mathbb E[f(z)^2]` for
:math:`z \sim \mathcal N(0, 1)`, which a gain must undo.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, optimize, special

from ..support import _validate

__all__ = [
    "activation_second_moment",
    "he_std",
    "selu_constants",
    "truncated_normal_std",
    "uniform_bound",
    "xavier_std",
]


def _normal_pdf(z):
    """The standard normal density (scipy.stats.norm.pdf, without importing scipy.stats)."""
    return np.exp(-0.5 * np.square(z)) / np.sqrt(2.0 * np.pi)


def _fan(value, name):
    return _validate.at_least(value, name, 1.0)


def xavier_std(fan_in, fan_out):
    r"""Glorot (Xavier) standard deviation, :math:`\sqrt{2 / (m_\mathrm{in} + m_\mathrm{out})}`.

    The compromise between keeping the forward second moment
    (:math:`\sigma^2 = 1/m_\mathrm{in}`) and the backward one
    (:math:`\sigma^2 = 1/m_\mathrm{out}`).

    Parameters
    ----------
    fan_in, fan_out : float or array_like
        Layer sizes, ``>= 1``.

    See Also
    --------
    he_std : the forward rule with an activation's gain.
    uniform_bound : the bound of a uniform initializer with this standard deviation.

    Examples
    --------
    A square layer of 256 units gets :math:`\sqrt{1/256}`:

    >>> from attnscale import xavier_std
    >>> float(xavier_std(256, 256))
    0.0625
    >>> round(float(xavier_std(512, 128)), 4)
    0.0559
    """
    return np.sqrt(2.0 / (_fan(fan_in, "fan_in") + _fan(fan_out, "fan_out")))


def he_std(fan_in, activation_second_moment_value=0.5):
    r"""He standard deviation, :math:`\sqrt{1 / (m_\mathrm{in}\, \mathbb E[f(z)^2])}`.

    For ReLU, :math:`\mathbb E[\operatorname{relu}(z)^2] = 1/2` gives the
    familiar :math:`\sqrt{2/m_\mathrm{in}}`.

    Parameters
    ----------
    fan_in : float or array_like
        Fan-in, ``>= 1``.
    activation_second_moment_value : float, optional
        :math:`\mathbb E[f(z)^2]` of the activation (default: ReLU's 1/2).

    See Also
    --------
    activation_second_moment : :math:`\mathbb E[f(z)^2]` of any activation.
    xavier_std : the rule without an activation, averaged with the backward one.

    Examples
    --------
    ReLU, fan-in 512: :math:`\sqrt{2/512} = 1/16`; tanh, with its second moment:

    >>> import numpy as np
    >>> from attnscale import activation_second_moment, he_std
    >>> float(he_std(512))
    0.0625
    >>> round(float(he_std(512, activation_second_moment(np.tanh))), 4)
    0.0704
    """
    gain = _validate.at_least(activation_second_moment_value, "activation_second_moment_value", 1e-300)
    return np.sqrt(1.0 / (_fan(fan_in, "fan_in") * gain))


def uniform_bound(std):
    r"""Bound :math:`a` of :math:`U(-a, a)` with the given standard deviation, :math:`a = \sqrt3\,\sigma`.

    Parameters
    ----------
    std : float or array_like
        Target standard deviation, ``>= 0``.

    Examples
    --------
    He-uniform for fan-in 512, :math:`\sqrt 3 \sqrt{2/512} = \sqrt{6/512}`:

    >>> from attnscale import he_std, uniform_bound
    >>> round(float(uniform_bound(he_std(512))), 4)
    0.1083
    """
    return np.sqrt(3.0) * _validate.scale(std, "std")


def truncated_normal_std(cut=2.0):
    r"""Standard deviation of :math:`\mathcal N(0, 1)` truncated to :math:`[-c, c]`.

    .. math:: \sqrt{1 - \frac{2 c\, \phi(c)}{2\Phi(c) - 1}}

    Dividing a truncated normal initializer's scale by this value restores
    the intended standard deviation (about 0.8796 for :math:`c = 2`).

    Parameters
    ----------
    cut : float or array_like, optional
        Truncation point :math:`c > 0` in standard deviations.

    Examples
    --------
    >>> from attnscale import truncated_normal_std
    >>> round(float(truncated_normal_std(2.0)), 4)
    0.8796
    """
    cut = _validate.at_least(cut, "cut", 1e-8)
    mass = special.erf(cut / np.sqrt(2.0))  # 2 Phi(c) - 1
    return np.sqrt(1.0 - 2.0 * cut * _normal_pdf(cut) / mass)


def activation_second_moment(activation):
    r"""Second moment :math:`\mathbb E[f(z)^2]` for :math:`z \sim \mathcal N(0, 1)`, by quadrature.

    Parameters
    ----------
    activation : callable
        Vectorized function of a float array.

    Returns
    -------
    float
        The second moment (relative accuracy about 1e-12).

    See Also
    --------
    he_std : the standard deviation that undoes it.

    Examples
    --------
    ReLU keeps half of :math:`\mathbb E[z^2] = 1`, tanh about 39%:

    >>> import numpy as np
    >>> from attnscale import activation_second_moment
    >>> round(activation_second_moment(lambda z: np.maximum(z, 0.0)), 10)
    0.5
    >>> round(activation_second_moment(np.tanh), 4)
    0.3943
    """
    if not callable(activation):
        raise TypeError(f"activation must be callable, got {type(activation).__name__}")

    def integrand(z):
        return float(activation(np.asarray(z)) ** 2) * _normal_pdf(z)

    left, _ = integrate.quad(integrand, -np.inf, 0.0, epsabs=0, epsrel=1e-13, limit=200)
    right, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0, epsrel=1e-13, limit=200)
    return left + right


def _selu_moments(scale, alpha):
    """Mean and second moment of selu(z) for z ~ N(0, 1), in closed form."""
    phi0 = 1.0 / np.sqrt(2.0 * np.pi)
    # E[z; z > 0] = phi(0); E[z^2; z > 0] = 1/2
    # E[e^z; z <= 0] = e^(1/2) Phi(-1); E[e^(2z); z <= 0] = e^2 Phi(-2)
    e1 = np.exp(0.5) * special.ndtr(-1.0)
    e2 = np.exp(2.0) * special.ndtr(-2.0)
    mean = scale * (phi0 + alpha * (e1 - 0.5))
    second = scale**2 * (0.5 + alpha**2 * (e2 - 2.0 * e1 + 0.5))
    return mean, second


def selu_constants():
    r"""SELU's :math:`(\lambda, \alpha)`: the fixed point of mean 0 and second moment 1.

    :math:`\operatorname{selu}(z) = \lambda z` for :math:`z > 0` and
    :math:`\lambda\alpha(e^z - 1)` otherwise.  The constants solve
    :math:`\mathbb E[\operatorname{selu}(z)] = 0` and
    :math:`\mathbb E[\operatorname{selu}(z)^2] = 1` for :math:`z \sim \mathcal N(0, 1)`,
    with the Gaussian integrals in closed form; solved with ``scipy.optimize.fsolve``.

    Returns
    -------
    scale, alpha : float
        About 1.0507 and 1.6733.

    Examples
    --------
    >>> from attnscale import selu_constants
    >>> scale, alpha = selu_constants()
    >>> round(scale, 4), round(alpha, 4)
    (1.0507, 1.6733)
    """

    def equations(params):
        mean, second = _selu_moments(*params)
        return [mean, second - 1.0]

    scale, alpha = optimize.fsolve(equations, [1.0, 1.5], xtol=1e-15)
    return float(scale), float(alpha)
