"""The library's own defaults (ours, not the chapter's), in a module the command line reads without numpy."""

__all__ = ["CHECK_SAMPLES", "TAYLOR_SEED"]

#: Coordinates per parameter that ``check_gradients`` samples unless told otherwise (the sampler's R).
CHECK_SAMPLES = 16
#: The seed of the Taylor test's deterministic direction unless told otherwise.
TAYLOR_SEED = 0
