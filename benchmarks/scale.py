"""Scale: sampling a shape far larger than memory, and checking a 10^8-element array without a copy.

1. `sample_tensor_coordinates` on shape [10^12, 10^6] with 64 samples. Goal < 1 ms.
2. A 64-sample check of a 10^8-element float64 array (800 MB), in a fresh
   subprocess so the baseline is clean: peak RSS (VmHWM) against the array's
   size. Goal: peak RSS ≤ array + 50 MB. The objective reads only the 64
   sampled elements (a 64-element gather), the analytic gradient is a
   broadcast view (no memory), so any copy of the parameters would show. The
   objective also records that it was handed the caller's array itself, and
   a CRC-32 of the whole array before and after proves bit-identical restoration.
3. The same for `check_gradients` at its defaults (64 coordinates), at
   --gradients-elements (10^7 by default): its directional test moves every
   element at once, so it works on whole-array temporaries; reported as the
   peak over the array, in MB and in multiples of the array. No goal: a
   measurement of what a user's whole-parameter check costs in memory. Its
   gradient is a resident array (cos 1 where the objective reads, 0
   elsewhere), since the directional test weighs every element.

Usage: python benchmarks/scale.py [--elements 100000000] [--gradients-elements 10000000] [--repeats 201]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time
import timeit
import zlib

from _common import REPOSITORY, header, median, reset_peak, seconds, status_kb, verdict

SAMPLER_SHAPE = (10**12, 10**6)
SAMPLES = 64
SAMPLER_GOAL_S = 1e-3
RSS_SLACK_MB = 50
MB = 10**6  # the goal is in decimal megabytes


def rss_child(elements: int, function: str) -> dict:
    """Runs in a fresh interpreter: allocate, check with ``function``, and report memory as JSON."""
    import numpy as np

    from gradcheck_cli.chapter.sampled import sampled_tensor_gradient_check
    from gradcheck_cli.check import check_gradients
    from gradcheck_cli.engine.sampling import sample_tensor_coordinates

    baseline_kb = status_kb("VmRSS")
    side = math.isqrt(elements)
    shape = (side, elements // side) if side * (elements // side) == elements else (elements,)
    parameters = np.empty(shape)
    parameters.fill(1.0)  # touch every page, so the array is resident
    allocated_kb = status_kb("VmRSS")
    peak_before_check_kb = status_kb("VmHWM")
    crc_before = zlib.crc32(parameters.data)

    flat = np.array([sample.flat_index for sample in sample_tensor_coordinates(shape, SAMPLES)])
    gathered = np.unravel_index(flat, shape)
    handed = {"calls": 0, "same_object": 0, "same_buffer": 0}
    address = parameters.ctypes.data

    def objective(candidate):
        if function == "check_gradients":
            candidate = candidate["x"]
        handed["calls"] += 1
        handed["same_object"] += candidate is parameters
        handed["same_buffer"] += candidate.ctypes.data == address
        return float(np.sin(candidate[gathered]).sum())

    if function == "check_gradients":
        # The directional test moves every element, so the gradient must be right everywhere: cos(1) where
        # the objective reads, 0 elsewhere (a resident array beside the parameters, made before the check).
        analytic = np.empty(shape)
        analytic.fill(0.0)
        analytic[gathered] = np.cos(1.0)
    else:
        analytic = np.broadcast_to(np.cos(1.0), shape)
    reset = reset_peak()
    before_check_kb = status_kb("VmRSS")
    start = time.perf_counter()
    if function == "check_gradients":
        report = check_gradients(objective, {"x": parameters}, {"x": analytic}, samples=SAMPLES)
        passed, coordinates, evaluations = report.verdict, report.checked, report.evaluations
    else:
        result = sampled_tensor_gradient_check(parameters, analytic, 1.0e-5, 1.0e-6, SAMPLES, objective)
        passed, coordinates, evaluations = result.passed, len(result.checks), 3 * len(result.checks)
    elapsed = time.perf_counter() - start
    peak_after_check_kb = status_kb("VmHWM")
    return {
        "shape": list(shape),
        "array_bytes": parameters.nbytes,
        "baseline_kb": baseline_kb,
        "allocated_kb": allocated_kb,
        "peak_before_check_kb": peak_before_check_kb,
        "peak_reset": reset,
        "before_check_kb": before_check_kb,
        "peak_after_check_kb": peak_after_check_kb,
        "check_seconds": elapsed,
        "passed": passed,
        "coordinates": coordinates,
        "evaluations": evaluations,
        "restored": zlib.crc32(parameters.data) == crc_before,
        **handed,
    }


def sampler_timing(repeats: int) -> None:
    from gradcheck_cli.engine.tensors import sample_tensor_coordinates

    samples = sample_tensor_coordinates(SAMPLER_SHAPE, SAMPLES)
    timer = timeit.Timer(lambda: sample_tensor_coordinates(SAMPLER_SHAPE, SAMPLES))
    loops = 20
    per_call = median(timer.repeat(repeat=repeats, number=loops)) / loops
    print(f"1. sample_tensor_coordinates({list(SAMPLER_SHAPE)}, {SAMPLES}): {len(samples)} coordinates,")
    print(f"   last {samples[-1].coordinate}; median of {repeats}×{loops} calls: {seconds(per_call)} per call")
    print(f"   {verdict(per_call * 1e3, SAMPLER_GOAL_S * 1e3, '<', ' ms')}")


def run_child(number: int, elements: int, function: str):
    """The child's JSON, or None after printing why it failed."""
    command = [sys.executable, os.path.abspath(__file__), "--rss-child", function, "--elements", str(elements)]
    completed = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True)
    if completed.returncode != 0:
        print(f"{number}. FAILED: the memory subprocess exited {completed.returncode}:\n{completed.stderr}")
        return None
    return json.loads(completed.stdout)


def gradients_rss_report(elements: int) -> int:
    child = run_child(3, elements, "check_gradients")
    if child is None:
        return 1
    array_mb = child["array_bytes"] / MB
    peak_mb = max(child["peak_before_check_kb"], child["peak_after_check_kb"]) * 1024 / MB
    print(f"3. check_gradients at its defaults ({SAMPLES} coordinates) on a {child['shape']} float64 array:")
    print(f"   array {array_mb:.1f} MB, its gradient as much again; process peak {peak_mb:.1f} MB")
    if child["peak_reset"]:
        growth_mb = (child["peak_after_check_kb"] - child["before_check_kb"]) * 1024 / MB
        print(f"   peak growth during the check itself: {growth_mb:.1f} MB = {growth_mb / array_mb:.1f}× the array")
    print(
        f"   {child['evaluations']} evaluations, {child['coordinates']} coordinates, verdict {child['passed']}; "
        f"handed the caller's array {child['same_object']} of {child['calls']} times; "
        f"bit-identical afterwards: {child['restored']}; check took {seconds(child['check_seconds'])}"
    )
    return 0


def rss_report(elements: int) -> int:
    child = run_child(2, elements, "chapter")
    if child is None:
        return 1
    array_mb = child["array_bytes"] / MB
    peak_kb = max(child["peak_before_check_kb"], child["peak_after_check_kb"])
    peak_mb = peak_kb * 1024 / MB
    print(f"2. {SAMPLES}-sample check of a {child['shape']} float64 array ({array_mb:.1f} MB), fresh subprocess:")
    print(f"   RSS before the array (python, numpy, gradcheck): {child['baseline_kb'] * 1024 / MB:.1f} MB")
    print(f"   RSS with the array resident:                     {child['allocated_kb'] * 1024 / MB:.1f} MB")
    print(f"   peak RSS of the process (VmHWM):                 {peak_mb:.1f} MB")
    goal_mb = array_mb + RSS_SLACK_MB
    print(f"   peak RSS vs array + {RSS_SLACK_MB} MB: {verdict(peak_mb, round(goal_mb, 1), unit=' MB')}")
    baseline_mb = child["baseline_kb"] * 1024 / MB
    print(
        f"   peak over the pre-array baseline: {peak_mb - baseline_mb:.1f} MB (array + {peak_mb - baseline_mb - array_mb:.1f} MB)"
    )
    if child["peak_reset"]:
        growth_mb = (child["peak_after_check_kb"] - child["before_check_kb"]) * 1024 / MB
        print(f"   peak growth during the check itself (VmHWM reset before it): {growth_mb:.2f} MB")
    else:
        print("   (VmHWM could not be reset here, so the check's own growth is not isolated)")
    print(
        f"   objective calls {child['calls']}: handed the caller's array object {child['same_object']} times, "
        f"its buffer {child['same_buffer']} times (no copy: {child['same_object'] == child['calls']})"
    )
    print(
        f"   array bit-identical afterwards (CRC-32 of all {child['array_bytes']} bytes): {child['restored']}; "
        f"check passed: {child['passed']}; check took {seconds(child['check_seconds'])}"
    )
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=10**8, help="elements of the checked array")
    parser.add_argument("--repeats", type=int, default=201, help="timing repeats of the sampler")
    parser.add_argument(
        "--gradients-elements", type=int, default=10**7, help="elements of the array check_gradients checks"
    )
    parser.add_argument("--rss-child", choices=("chapter", "check_gradients"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.rss_child:
        print(json.dumps(rss_child(arguments.elements, arguments.rss_child)))
        return 0

    header("scale: a shape larger than memory, and a 10^8-element array without a copy")
    sampler_timing(arguments.repeats)
    return rss_report(arguments.elements) | gradients_rss_report(arguments.gradients_elements)


if __name__ == "__main__":
    sys.exit(main())
