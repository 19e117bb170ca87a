"""attnscale: the numerical and symbolic companion of *The Scale of Attention*.

Every public function is vectorized over NumPy arrays, validates its input
(``ValueError``/``TypeError`` naming the argument and its allowed range) and
names in its docstring the equation of the book it implements.
"""

from .checks import CheckCannotDiscriminate, CheckFailed, check_close, check_true
from .cosine import cosine_alpha_star, cosine_density, cosine_log_mgf, cosine_objective
from .decoder import best_causal_scale, gradient_fraction
from .deepnet import ARCHITECTURES, activation_second_moments, layer_second_moments
from .entropy import (
    entropy_invariant_scale,
    entropy_matching_scale,
    gaussian_meanfield_entropy,
    softmax_entropy,
)
from .formatting import format_number, format_uncertain
from .gaussian import gaussian_alpha_star, gaussian_log_mgf, gaussian_objective
from .initialization import (
    activation_second_moment,
    he_std,
    selu_constants,
    truncated_normal_std,
    uniform_bound,
    xavier_std,
)
from .montecarlo import sample_cosine_scores, sample_gaussian_scores, sampled_objective
from .plotting import use_book_style
from .recipes import (
    Recommendation,
    ScaleEntry,
    logn_beyond_training_scale,
    qknorm_initial_scale,
    recommend_scale,
    scalable_softmax_scale,
    standard_scale,
    yarn_scale,
)
from .softmax import (
    collision_probability,
    gradient_l1,
    gradient_objective,
    renyi2_entropy,
    softmax,
    softmax_jacobian,
)
from .transfer import ATTENTIONS, fit_attention_parameter, retrieval_error, retrieval_task

__version__ = "0.1.0"

__all__ = [
    "ARCHITECTURES",
    "ATTENTIONS",
    "CheckCannotDiscriminate",
    "CheckFailed",
    "Recommendation",
    "ScaleEntry",
    "activation_second_moment",
    "activation_second_moments",
    "best_causal_scale",
    "check_close",
    "check_true",
    "collision_probability",
    "cosine_alpha_star",
    "cosine_density",
    "cosine_log_mgf",
    "cosine_objective",
    "entropy_invariant_scale",
    "entropy_matching_scale",
    "fit_attention_parameter",
    "format_number",
    "format_uncertain",
    "gaussian_alpha_star",
    "gaussian_log_mgf",
    "gaussian_meanfield_entropy",
    "gaussian_objective",
    "gradient_fraction",
    "gradient_l1",
    "gradient_objective",
    "he_std",
    "layer_second_moments",
    "logn_beyond_training_scale",
    "qknorm_initial_scale",
    "recommend_scale",
    "renyi2_entropy",
    "retrieval_error",
    "retrieval_task",
    "sample_cosine_scores",
    "sample_gaussian_scores",
    "sampled_objective",
    "scalable_softmax_scale",
    "selu_constants",
    "softmax",
    "softmax_entropy",
    "softmax_jacobian",
    "standard_scale",
    "truncated_normal_std",
    "uniform_bound",
    "use_book_style",
    "xavier_std",
    "yarn_scale",
]
