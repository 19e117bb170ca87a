"""attnscale: the numerical and symbolic companion of *The Scale of Attention*.

Every public function is vectorized over NumPy arrays, validates its input
(``ValueError``/``TypeError`` naming the argument and its allowed range) and
names in its docstring the equation of the book it implements.
"""

from .checks import CheckFailed, check_close, check_true
from .plotting import use_book_style
from .softmax import (
    collision_probability,
    gradient_l1,
    gradient_objective,
    renyi2_entropy,
    softmax,
    softmax_jacobian,
)

__version__ = "0.1.0"

__all__ = [
    "CheckFailed",
    "check_close",
    "check_true",
    "collision_probability",
    "gradient_l1",
    "gradient_objective",
    "renyi2_entropy",
    "softmax",
    "softmax_jacobian",
    "use_book_style",
]
