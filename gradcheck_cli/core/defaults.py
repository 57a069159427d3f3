"""The library's own defaults (ours, not the chapter's), in a module the command line reads without numpy."""

__all__ = ["CHECK_SAMPLES", "SEED"]

#: Coordinates per parameter that ``check_gradients`` samples unless told otherwise (the sampler's R).
CHECK_SAMPLES = 16
#: The one seed of everything a check draws unless told otherwise: the directional test's ±1 signs,
#: the adapters' cotangents and tangents, the Taylor test's and the Hessian check's directions.
SEED = 0
