"""benchmarks/jobs.py's problems: a tanh recurrence unrolled over many steps, CPU-bound in numpy.

x₀ = 0, x_{k+1} = tanh(A x_k + w) for k < K, loss ½‖x_K‖², with a hand-written backward pass
(backpropagation through the K steps). A is [16, 16] with spectral norm 1/2 and w is [16], both
from a seeded generator, so every worker process that loads the problem by reference gets the
very same arrays. One call is K small matrix-vector products, each a few microseconds of numpy
on one core that nothing else can share: :data:`STEPS` makes it about 10 ms on the machine
docs/parallel.md was measured on (a check of every coordinate: about 5 s), :data:`SECOND_STEPS`
about 2 ms (a check of about 1 s), :data:`CHEAP_STEPS` about 20 µs.

    problem         # ~10 ms a call: where --jobs helps
    second_problem  # ~2 ms a call: a check of about a second, where the workers' start-up shows
    cheap_problem   # ~20 µs a call: where a worker's start-up costs more than the whole check
"""

import numpy as np

from gradcheck_cli import GradientProblem

UNITS = 16
STEPS = 5500
SECOND_STEPS = 1100
CHEAP_STEPS = 12


def _parameters() -> dict:
    generator = np.random.default_rng(20240613)
    a = generator.standard_normal((UNITS, UNITS))
    a *= 0.5 / np.linalg.norm(a, 2)
    return {"A": a, "w": generator.standard_normal(UNITS)}


def _states(parameters, steps: int) -> list:
    a, w = parameters["A"], parameters["w"]
    states = [np.zeros(UNITS)]
    for _ in range(steps):
        states.append(np.tanh(a @ states[-1] + w))
    return states


def _loss(parameters, steps: int) -> float:
    a, w = parameters["A"], parameters["w"]
    x = np.zeros(UNITS)
    for _ in range(steps):
        x = np.tanh(a @ x + w)
    return 0.5 * float(x @ x)


def _gradients(parameters, steps: int) -> dict:
    states = _states(parameters, steps)
    d_a, d_w = np.zeros((UNITS, UNITS)), np.zeros(UNITS)
    d_x = states[-1]
    for k in range(steps - 1, -1, -1):
        d_z = d_x * (1.0 - states[k + 1] ** 2)
        d_w += d_z
        d_a += np.outer(d_z, states[k])
        d_x = parameters["A"].T @ d_z
    return {"A": d_a, "w": d_w}


def _problem(steps: int) -> GradientProblem:
    parameters = _parameters()
    return GradientProblem(lambda current: _loss(current, steps), parameters, _gradients(parameters, steps))


def problem() -> GradientProblem:
    """The recurrence over STEPS steps: about 10 ms a call."""
    return _problem(STEPS)


def second_problem() -> GradientProblem:
    """The recurrence over SECOND_STEPS steps: about 2 ms a call."""
    return _problem(SECOND_STEPS)


def cheap_problem() -> GradientProblem:
    """The recurrence over CHEAP_STEPS steps: about 20 µs a call."""
    return _problem(CHEAP_STEPS)
