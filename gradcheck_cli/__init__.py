"""gradcheck: check gradients before trusting backpropagation.

Three-point finite differences from the actual floating-point probes
fl(θ−h) and fl(θ+h), the unequal-spacing stencil, a scale-aware error,
deterministic tensor coordinates, typed errors, and exact restoration of
every perturbed value (chapter 13 of the course, in Python, bit for bit).
"""

import os as _os

from . import errors

__version__ = "0.1.0"

if "GRADCHECK_PROBLEM_FILES" in _os.environ:  # a process a problem's code started: engine/loaded.py
    from .engine.loaded import find_loaded_files

    find_loaded_files()

_ESTIMATOR_NAMES = (
    "CentralDifference",
    "GradientComparison",
    "OneSidedSlopeComparison",
    "ScalarGradientCheck",
    "central_difference",
    "compare_gradients",
    "compare_one_sided_slopes",
    "scalar_gradient_check",
)
_TENSOR_NAMES = ("CoordinateGradientCheck", "TensorGradientCheck", "sampled_tensor_gradient_check")

# Everything is loaded on first use: the tensor API and the checks of a user's problem need numpy,
# and even the numpy-free modules cost start-up time that `gradcheck --help` should not pay.
_LAZY_MODULES = {
    **dict.fromkeys(_ESTIMATOR_NAMES, "engine.estimator"),
    **dict.fromkeys(("SampledCoordinate", "sample_tensor_coordinates"), "engine.sampling"),
    **dict.fromkeys(("StepScanRecord", "error_regimes", "step_scan"), "chapter.scan"),
    **dict.fromkeys(_TENSOR_NAMES, "chapter.sampled"),
    **dict.fromkeys(
        (
            "check_gradients",
            "check_problem",
            "Options",
            "GradientCheckReport",
            "ParameterCheck",
            "CoordinateCheck",
            "KinkVerdict",
            "PurityVerdict",
        ),
        "check",
    ),
    **dict.fromkeys(("GradientProblem", "ProblemReference", "load_problem", "as_problem"), "engine.problem"),
    **dict.fromkeys(("ProbeDtype", "probe_dtype", "dtype_perturbations"), "engine.dtypes"),
    **dict.fromkeys(
        ("advise_step", "advise_coordinate_step", "advise_problem_steps", "StepAdvice", "StepEstimate"), "advice.steps"
    ),
    **dict.fromkeys(("check_taylor", "TaylorResult"), "taylor.remainder"),
    **dict.fromkeys(("check_hessian_vector_product", "hessian_problem", "HessianVectorReport"), "check.hessian"),
    **dict.fromkeys(("plot_scan", "plot_taylor"), "display.plotting"),
}


def __getattr__(name):
    if name in _LAZY_MODULES:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY_MODULES[name]}", __name__), name)
    # The errors too load on first use (errors/__init__.py), and so does the list of every name. Only
    # a class name is looked for among them: ``from . import output`` asks for the submodule first.
    if name == "__all__":
        names = globals()["__all__"] = ["__version__", *_LAZY_MODULES, *errors.__all__]
        return names
    if name[:1].isupper():
        try:
            return getattr(errors, name)
        except AttributeError:
            pass
    raise AttributeError(f"module 'gradcheck_cli' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__getattr__("__all__")})
