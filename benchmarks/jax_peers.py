"""Against jax.test_util.check_grads, on the same JAX functions, correct and mutated (needs jax).

The functions are _jax_cases.py's (jax.numpy, jax.scipy.special and .linalg, jax.nn, lax, small
models), each at seeded points in float64 and float32. Every function is wrapped in a custom_vjp
whose backward is jax's own vjp, then the gradient of the first argument is kept (correct) or
mutated: doubled (×2), negated (sign), transposed (the first argument is a 4×4 matrix) or its
largest-magnitude element doubled (largest ×2). A mutation that leaves the gradient unchanged at
the point (a symmetric gradient transposed) is not counted. Two checkers run on each case:

* gradcheck: ``gradcheck_cli.jax.check_function`` at its defaults;
* check_grads: ``jax.test_util.check_grads(fn, args, order=1, modes=("rev",))`` at its defaults
  (a custom_vjp has no forward mode); it passes when it does not raise.

A correct case that fails is a false fail; a mutated case that passes is a missed bug. One untimed
call of the function, its vjp and its backward compiles them first; then each checker runs twice on
each case, one after the other: "cold" is the first run, which traces and compiles what the checker
itself calls, "warm" the second, and the verdicts are the second run's (the same, both checkers
being deterministic). The CPU time of each checker over all cases is printed with their ratio,
from the same run. Nothing is asserted.

Usage: python benchmarks/jax_peers.py [--limit N] [--json-out FILE]
"""

import argparse
import json
import sys
import time
import warnings
from collections import Counter

from _common import header, seconds

try:
    import jax
except ImportError:
    print("jax_peers.py: jax is not installed (pip install jax==0.6.2, the CPU build); nothing to compare")
    sys.exit(0)

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from _jax_cases import arguments, cases  # noqa: E402
from gradcheck_cli.jax import check_function  # noqa: E402

MUTATIONS = {
    "none": lambda g: g,
    "×2": lambda g: 2 * g,
    "sign": lambda g: -g,
    "transpose": lambda g: g.T,
    "largest ×2": lambda g: jnp.where(jnp.abs(g) == jnp.max(jnp.abs(g)), 2 * g, g),
}
DTYPES = ("float64", "float32")


def mutated(fn, mutation: str):
    """``fn`` with a custom_vjp: jax's own vjp, the first argument's gradient passed through ``mutation``."""

    @jax.custom_vjp
    def wrapped(*args):
        return fn(*args)

    def backward(args, g):
        grads = list(jax.vjp(fn, *args)[1](g))
        grads[0] = MUTATIONS[mutation](grads[0])
        return tuple(grads)

    wrapped.defvjp(lambda *args: (fn(*args), args), backward)
    return jax.jit(wrapped)


def effective(fn, args, mutation: str) -> bool:
    """Whether the mutation changes the first argument's gradient at this point (for a random cotangent)."""
    if mutation == "none":
        return True
    if mutation == "transpose" and (args[0].ndim != 2 or args[0].shape[0] != args[0].shape[1]):
        return False
    outputs, pullback = jax.vjp(fn, *args)
    cotangent = jax.tree_util.tree_map(
        lambda out: jnp.ones_like(out) + 0.25 * jnp.arange(out.size).reshape(out.shape), outputs
    )
    right = np.asarray(pullback(cotangent)[0], dtype=np.float64)
    wrong = np.asarray(MUTATIONS[mutation](jnp.asarray(right)), dtype=np.float64)
    return not np.allclose(right, wrong, rtol=1e-3, atol=1e-3 * float(np.max(np.abs(right), initial=0.0)))


def ours(fn, args) -> str:
    try:
        return check_function(fn, tuple(args)).verdict
    except Exception as error:  # noqa: BLE001 (a benchmark records what happened)
        return f"error: {type(error).__name__}"


def peers(fn, args) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_grads(fn, args, order=1, modes=("rev",))
        return "passed"
    except AssertionError:
        return "failed"
    except Exception as error:  # noqa: BLE001
        return f"error: {type(error).__name__}"


def run_case(index, name, fn, shapes, dtype) -> list:
    args = arguments(index, shapes, dtype)
    rows = []
    for mutation in MUTATIONS:
        row = {"function": name, "dtype": dtype, "mutation": mutation}
        try:
            if not effective(fn, args, mutation):
                continue
            checked = mutated(fn, mutation)
            outputs, pullback = jax.vjp(checked, *args)  # compiled, with the backward, before either clock
            jax.block_until_ready((checked(*args), pullback(jax.tree_util.tree_map(jnp.ones_like, outputs))))
        except Exception as error:  # noqa: BLE001 (the case itself is broken: recorded, not run)
            rows.append(
                {
                    **row,
                    "gradcheck": f"error: {error!r}"[:200],
                    "check_grads": "error: case",
                    "gradcheck_cpu": 0.0,
                    "check_grads_cpu": 0.0,
                }
            )
            continue
        for run in ("cold", "warm"):  # cold: the first call traces and compiles what the checker needs
            for checker, check in (("gradcheck", ours), ("check_grads", peers)):
                start = time.process_time()
                row[checker] = check(checked, args)
                row[f"{checker}_{run}_cpu"] = time.process_time() - start
        rows.append(row)
    return rows


def table(rows: list, dtype: str) -> list:
    """Markdown lines: per mutation, each checker's passed / failed / other counts."""
    lines = [
        f"| {dtype} | cases | gradcheck passed | failed | inconclusive | check_grads passed | failed | error |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mutation in MUTATIONS:
        selected = [row for row in rows if row["dtype"] == dtype and row["mutation"] == mutation]
        ours_counts = Counter(_outcome(row["gradcheck"]) for row in selected)
        theirs = Counter(_outcome(row["check_grads"]) for row in selected)
        label = "correct" if mutation == "none" else mutation
        lines.append(
            f"| {label} | {len(selected)} | {ours_counts['passed']} | {ours_counts['failed']} | "
            f"{ours_counts['inconclusive'] + ours_counts['error']} | {theirs['passed']} | {theirs['failed']} | "
            f"{theirs['error']} |"
        )
    return lines


def _outcome(verdict: str) -> str:
    if verdict.startswith("error"):
        return "error"
    return "inconclusive" if verdict not in ("passed", "failed") else verdict


def summary(rows: list, dtype: str) -> str:
    selected = [row for row in rows if row["dtype"] == dtype]
    correct = [row for row in selected if row["mutation"] == "none"]
    wrong = [row for row in selected if row["mutation"] != "none"]
    parts = []
    for checker in ("gradcheck", "check_grads"):
        false_fails = sum(row[checker] == "failed" for row in correct)
        missed = sum(row[checker] == "passed" for row in wrong)
        parts.append(
            f"{checker}: false fails {false_fails}/{len(correct)} ({100 * false_fails / max(len(correct), 1):.1f} %), "
            f"missed mutations {missed}/{len(wrong)}"
        )
    for run in ("cold", "warm"):
        cpu = {
            checker: sum(row[f"{checker}_{run}_cpu"] for row in selected) for checker in ("gradcheck", "check_grads")
        }
        ratio = cpu["gradcheck"] / cpu["check_grads"] if cpu["check_grads"] else float("nan")
        parts.append(
            f"CPU time {run}: gradcheck {seconds(cpu['gradcheck'])}, check_grads {seconds(cpu['check_grads'])} "
            f"(gradcheck/check_grads {ratio:.2f})"
        )
    return "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="Only the first N functions.")
    parser.add_argument("--json-out", default=None, help="Write every case's outcome to this file.")
    options = parser.parse_args()
    header("gradcheck_cli.jax against jax.test_util.check_grads", jax=jax.__version__)
    listed = cases()[: options.limit]
    rows = []
    for dtype in DTYPES:
        for index, (name, fn, shapes) in enumerate(listed):
            rows.extend(run_case(index, name, fn, shapes, dtype))
            print(f"{dtype} {index + 1}/{len(listed)} {name}", file=sys.stderr, flush=True)
    print(f"{len(listed)} functions, {len(MUTATIONS) - 1} mutations of the first argument's gradient")
    for dtype in DTYPES:
        print()
        print("\n".join(table(rows, dtype)))
        print(summary(rows, dtype))
    unusual = [row for row in rows if (row["mutation"] == "none") != (row["gradcheck"] == "passed")]
    unusual = [row for row in unusual if not (row["mutation"] != "none" and row["gradcheck"] == "failed")]
    if unusual:
        print()
        print("gradcheck's verdicts other than passed on a correct case or failed on a mutated one:")
        for row in unusual:
            print(f"  {row['function']} ({row['dtype']}, {row['mutation']}): {row['gradcheck']}")
    if options.json_out:
        with open(options.json_out, "w", encoding="utf-8") as out:
            json.dump({"functions": len(listed), "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
