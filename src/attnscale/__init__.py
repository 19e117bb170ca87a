"""attnscale: the numerical and symbolic companion of *The Scale of Attention*.

Every public function is vectorized over NumPy arrays, validates its input
(``ValueError``/``TypeError`` naming the argument and its allowed range) and
names in its docstring the equation of the book it implements.
"""

from ._version import __version__ as __version__
from .advice import LENGTH_VERDICT, Answer, answers
from .calculator import Recommendation, ScaleEntry, recommend_scale
from .checks import CheckCannotDiscriminate, CheckFailed, check_close, check_holds, check_true
from .cosine import (
    cosine_alpha_star,
    cosine_alpha_star_large_d,
    cosine_density,
    cosine_log_mgf,
    cosine_objective,
)
from .decoder import best_causal_scale, gradient_fraction
from .deepnet import ARCHITECTURES, activation_second_moments, layer_second_moments, log_growth_law
from .entropy import (
    entropy_invariant_scale,
    entropy_matching_scale,
    gaussian_meanfield_entropy,
    softmax_entropy,
    spike_over_bulk_entropy,
)
from .exact import (
    ScoreLaw,
    cosine_law,
    expected_collision,
    expected_entropy,
    expected_gradient,
    expected_max_weight,
    gaussian_law,
    gradient_limit,
)
from .formatting import format_interval, format_number, format_uncertain
from .gaussian import gaussian_alpha_star, gaussian_log_mgf, gaussian_objective
from .initialization import (
    activation_second_moment,
    he_std,
    selu_constants,
    truncated_normal_std,
    uniform_bound,
    xavier_std,
)
from .intervals import (
    crossed_components,
    crossed_contrast,
    crossed_interval,
    median_interval,
    paired_difference,
    seed_interval,
    welch_tolerance,
)
from .montecarlo import (
    TypicalRowScales,
    conditional_mean_log_scale,
    conditional_objective,
    sample_cosine_scores,
    sample_gaussian_scores,
    sampled_objective,
    typical_row_scales,
)
from .plotting import use_book_style
from .recipes import (
    logn_beyond_training_scale,
    qknorm_initial_scale,
    scalable_softmax_scale,
    standard_scale,
    yarn_scale,
)
from .softmax import (
    collision_probability,
    gradient_frobenius,
    gradient_l1,
    gradient_objective,
    renyi2_entropy,
    row_best_scale,
    softmax,
    softmax_jacobian,
)
from .training import (
    TrainingResult,
    TunedTraining,
    attention_loss_and_gradients,
    attention_scores,
    evaluate_attention,
    init_projections,
    retrieval_batch,
    train_at_best_rate,
    train_attention,
)
from .transfer import ATTENTIONS, fit_attention_parameter, retrieval_error, retrieval_task

__all__ = [
    "ARCHITECTURES",
    "ATTENTIONS",
    "LENGTH_VERDICT",
    "Answer",
    "CheckCannotDiscriminate",
    "CheckFailed",
    "Recommendation",
    "ScaleEntry",
    "ScoreLaw",
    "TrainingResult",
    "TunedTraining",
    "TypicalRowScales",
    "activation_second_moment",
    "activation_second_moments",
    "answers",
    "attention_loss_and_gradients",
    "attention_scores",
    "best_causal_scale",
    "check_close",
    "check_holds",
    "check_true",
    "collision_probability",
    "conditional_mean_log_scale",
    "conditional_objective",
    "cosine_alpha_star",
    "cosine_alpha_star_large_d",
    "cosine_density",
    "cosine_law",
    "cosine_log_mgf",
    "cosine_objective",
    "crossed_components",
    "crossed_contrast",
    "crossed_interval",
    "entropy_invariant_scale",
    "entropy_matching_scale",
    "evaluate_attention",
    "expected_collision",
    "expected_entropy",
    "expected_gradient",
    "expected_max_weight",
    "fit_attention_parameter",
    "format_interval",
    "format_number",
    "format_uncertain",
    "gaussian_alpha_star",
    "gaussian_law",
    "gaussian_log_mgf",
    "gaussian_meanfield_entropy",
    "gaussian_objective",
    "gradient_fraction",
    "gradient_frobenius",
    "gradient_l1",
    "gradient_limit",
    "gradient_objective",
    "he_std",
    "init_projections",
    "layer_second_moments",
    "log_growth_law",
    "logn_beyond_training_scale",
    "median_interval",
    "paired_difference",
    "qknorm_initial_scale",
    "recommend_scale",
    "renyi2_entropy",
    "retrieval_batch",
    "retrieval_error",
    "retrieval_task",
    "row_best_scale",
    "sample_cosine_scores",
    "sample_gaussian_scores",
    "sampled_objective",
    "scalable_softmax_scale",
    "seed_interval",
    "selu_constants",
    "softmax",
    "softmax_entropy",
    "softmax_jacobian",
    "spike_over_bulk_entropy",
    "standard_scale",
    "train_at_best_rate",
    "train_attention",
    "truncated_normal_std",
    "typical_row_scales",
    "uniform_bound",
    "use_book_style",
    "welch_tolerance",
    "xavier_std",
    "yarn_scale",
]

# Part IV, recipes: every published length rule (issue 14).
from .recipes import (
    ADAPTIVE_TEMPERATURE_POLY,
    adaptive_temperature,
    critical_scale,
    entropy_matched_scale,
    head_scale_from_entropy,
    infoscale_factor,
    llama4_attention_scale,
    longrope_attention_factor,
    yarn_mscale,
)

__all__ += [
    "ADAPTIVE_TEMPERATURE_POLY",
    "adaptive_temperature",
    "critical_scale",
    "entropy_matched_scale",
    "head_scale_from_entropy",
    "infoscale_factor",
    "llama4_attention_scale",
    "longrope_attention_factor",
    "yarn_mscale",
]

# Part III, which law: the gaps at the top of a row (issue 30).
from .diagnose import (  # noqa: E402
    LawDiagnosis,
    accumulation_scale,
    diagnose_law,
    iid_critical_scale,
    planted_length_factor,
)

__all__ += [
    "LawDiagnosis",
    "accumulation_scale",
    "diagnose_law",
    "iid_critical_scale",
    "planted_length_factor",
]
