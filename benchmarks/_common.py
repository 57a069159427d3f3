"""What every benchmark prints: the machine, the reproducing command, interleaved medians.

The machines these run on are shared and noisy, so no script trusts an
absolute time: each one times the things it compares in the same run,
interleaved (the order rotates every round, so drift hits every contender
alike), and reports medians and their ratios. Nothing here asserts a time.
"""

import contextlib
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


#: Keep freed memory in the process: no trimming below 1 GiB, no mmap below 32 MiB.
STEADY_MALLOC = "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=33554432"


def with_steady_malloc(natural: bool) -> None:
    """Re-execute this script with glibc's malloc keeping freed memory, unless ``natural``.

    glibc hands freed memory back to the kernel by heuristics that depend on
    the process's history, so the same loop can re-fault its temporaries on
    every call in one run and not in the next: the same approx_fprime took
    95 s (49 million page faults, 74 s in the kernel) once and 13 s another
    time, and the NLL objective ran 1.3 s or 1.8 s. Fixed thresholds take
    that lottery out of the comparison. Nothing happens off Linux or when
    GLIBC_TUNABLES is already set (as it is after the re-execution).
    """
    if natural or sys.platform != "linux" or "GLIBC_TUNABLES" in os.environ:
        return
    environment = dict(os.environ, GLIBC_TUNABLES=STEADY_MALLOC)
    os.execve(sys.executable, [sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]], environment)


def malloc_line() -> str:
    return "malloc: GLIBC_TUNABLES=" + os.environ.get("GLIBC_TUNABLES", "(unset: glibc's defaults)")


def cpu_model() -> str:
    """The first ``model name`` of /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cores() -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{usable} usable of {os.cpu_count()}"


def machine_line(**versions) -> str:
    """One line naming the machine and the versions that matter to the figures."""
    import numpy

    parts = [
        f"cpu {cpu_model()}",
        f"cores {cores()}",
        f"{platform.system()} {platform.release()}",
        f"Python {platform.python_version()}",
        f"numpy {numpy.__version__}",
    ]
    parts += [f"{name} {version}" for name, version in versions.items()]
    if "OPENBLAS_CORETYPE" in os.environ:
        parts.append(f"OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}")
    if hasattr(os, "getloadavg"):
        parts.append("load avg {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return "machine: " + ", ".join(parts)


def reproduce_line() -> str:
    """The command that reproduces this run, from the repository root."""
    script = Path(sys.argv[0]).resolve()
    with contextlib.suppress(ValueError):
        script = script.relative_to(REPOSITORY)
    return "reproduce: " + shlex.join(["python", str(script), *sys.argv[1:]])


def header(title: str, **versions) -> None:
    print(f"== {title} ==")
    print(machine_line(**versions))
    print(reproduce_line())


def interleaved(contenders: dict, repeats: int, warmup: int = 1) -> dict:
    """Time each zero-argument callable ``repeats`` times, rotating the order every round.

    Returns
    -------
    dict mapping each name to ``{"wall": [...], "cpu": [...]}``: wall-clock
    seconds and this process's CPU seconds (user + system) of each run. CPU
    time leaves out the stretches when another tenant held the core, so it
    is the steadier clock for single-threaded work in this process.
    """
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            contenders[name]()
    durations = {name: {"wall": [], "cpu": []} for name in names}
    for round_number in range(repeats):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = time.perf_counter(), time.process_time()
            contenders[name]()
            durations[name]["cpu"].append(time.process_time() - cpu)
            durations[name]["wall"].append(time.perf_counter() - wall)
    return durations


def median(values) -> float:
    return statistics.median(values)


def spread(values) -> str:
    """Median with the range, for a reader to judge the noise."""
    if len(values) == 1:
        return f"{seconds(values[0])}  (one run)"
    return f"{seconds(median(values))}  (min {seconds(min(values))}, max {seconds(max(values))})"


def seconds(value: float) -> str:
    """A duration with a unit a reader takes in at a glance."""
    if value >= 1.0:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    return f"{value * 1e6:.2f} µs"


def verdict(value: float, goal: float, comparison: str = "≤", unit: str = "") -> str:
    """Whether ``value`` meets the goal; printed, never asserted."""
    met = value <= goal if comparison == "≤" else value < goal
    return f"goal {comparison} {goal:g}{unit}: {'met' if met else 'MISSED'}"


def status_kb(field: str) -> int:
    """A ``VmRSS``/``VmHWM``-style field of /proc/self/status, in KiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux ≥ 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False
