"""gradcheck: check gradients before trusting backpropagation.

Three-point finite differences from the actual floating-point probes
fl(θ−h) and fl(θ+h), the unequal-spacing stencil, a scale-aware error,
deterministic tensor coordinates, typed errors, and exact restoration of
every perturbed value (chapter 13 of the course, in Python, bit for bit).
"""

from .errors import *  # noqa: F403
from .errors import __all__ as _error_names
from .estimator import (
    CentralDifference,
    GradientComparison,
    OneSidedSlopeComparison,
    ScalarGradientCheck,
    central_difference,
    compare_gradients,
    compare_one_sided_slopes,
    scalar_gradient_check,
)
from .sampling import SampledCoordinate, sample_tensor_coordinates
from .scan import StepScanRecord, error_regimes, step_scan

__version__ = "0.1.0"

_TENSOR_NAMES = ("CoordinateGradientCheck", "TensorGradientCheck", "sampled_tensor_gradient_check")

# Checking a user's own problem (numpy, loaded on first use like the tensor API).
_LAZY_MODULES = {
    **dict.fromkeys(_TENSOR_NAMES, "tensors"),
    **dict.fromkeys(
        (
            "check_gradients",
            "check_problem",
            "GradientCheckReport",
            "ParameterCheck",
            "CoordinateCheck",
            "KinkVerdict",
            "PurityVerdict",
        ),
        "check",
    ),
    **dict.fromkeys(("GradientProblem", "load_problem", "as_problem"), "problem"),
    **dict.fromkeys(("ProbeDtype", "probe_dtype", "dtype_perturbations"), "dtypes"),
    **dict.fromkeys(
        ("advise_step", "advise_coordinate_step", "advise_problem_steps", "StepAdvice", "StepEstimate"), "advice"
    ),
    **dict.fromkeys(("taylor_test", "TaylorResult"), "taylor"),
    **dict.fromkeys(("plot_scan", "plot_taylor"), "plotting"),
}

__all__ = [
    "__version__",
    "CentralDifference",
    "GradientComparison",
    "OneSidedSlopeComparison",
    "ScalarGradientCheck",
    "StepScanRecord",
    "central_difference",
    "compare_gradients",
    "compare_one_sided_slopes",
    "scalar_gradient_check",
    "step_scan",
    "error_regimes",
    "SampledCoordinate",
    "sample_tensor_coordinates",
    *_LAZY_MODULES,
    *_error_names,
]


def __getattr__(name):
    # The tensor API needs numpy; load it on first use so that scalar work
    # (and `gradcheck quadratic`) never pays for importing numpy.
    if name in _LAZY_MODULES:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY_MODULES[name]}", __name__), name)
    raise AttributeError(f"module 'gradcheck_cli' has no attribute {name!r}")
