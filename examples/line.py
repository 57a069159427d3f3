"""A line fitted by least squares, the README's example; wrong_problem forgets the square's 2."""

import numpy as np

from gradcheck_cli import GradientProblem

x, y = np.array([0.5, -1.0, 2.0, 1.5]), np.array([1.0, -2.0, 3.5, 3.0])


def loss(p):  # the mean squared error of w·x + b
    return float(np.mean((p["w"] * x + p["b"] - y) ** 2))


def problem(factor=2.0):
    p = {"w": np.array([1.25]), "b": np.array([0.5])}
    r = p["w"] * x + p["b"] - y  # the residuals
    gradients = {"w": factor * np.mean(r * x, keepdims=True), "b": factor * np.mean(r, keepdims=True)}
    return GradientProblem(loss, p, gradients)


def wrong_problem():
    return problem(factor=1.0)
