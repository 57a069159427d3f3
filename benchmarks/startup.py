"""Start-up: `gradcheck quadratic` against `python -c "import click"`.

Each command runs as a fresh process, the commands interleaved round after
round (the order rotating), and the ratio of medians is reported. Two
conditions are timed side by side: bytecode cached, as a user has it after
`pip install` (the goal applies here), and this environment as it is, where
PYTHONDONTWRITEBYTECODE=1 with an editable install means gradcheck_cli is
compiled from source at every start while click's bytecode is cached. A
scalar subcommand must not import numpy or rich, so `python -X importtime`
names the heavy modules imported and what the command imports beyond click.

Usage: python benchmarks/startup.py [--repeats 30]
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPOSITORY, header, interleaved, median, seconds, spread, verdict

GOAL = 1.15
HEAVY_MODULES = ("numpy", "rich", "scipy", "matplotlib", "torch", "ml_dtypes")
HELLO_CLICK = """
import click
@click.command()
@click.version_option("1.0")
@click.option("--name", default="world")
def hello(name):
    click.echo(f"hello {name}")
hello()
"""


def console_script():
    """The `gradcheck` script installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "gradcheck"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("gradcheck")


def run_once(command, environment=None):
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, env=environment)


def timed_process(command, environment):
    def run():
        subprocess.run(
            command, cwd=REPOSITORY, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )

    return run


def imported_modules(command, environment, runs=5):
    """(module → (self µs, cumulative µs, depth)), medians over ``runs`` `-X importtime` runs of ``command``."""
    samples = {}
    for _ in range(runs):
        completed = run_once([sys.executable, "-X", "importtime", *command], environment)
        for line in completed.stderr.splitlines():
            if not line.startswith("import time:") or "imported package" in line:
                continue
            self_us, cumulative_us, name = line[len("import time:") :].split("|", 2)
            depth = (len(name) - len(name.lstrip(" "))) // 2
            samples.setdefault(name.strip(), []).append((int(self_us), int(cumulative_us), depth))
    return {
        name: (median([s for s, _, _ in timings]), median([c for _, c, _ in timings]), timings[0][2])
        for name, timings in samples.items()
    }


def report_imports(label, command, baseline, environment):
    modules = imported_modules(command, environment)
    heavy = [name for name in HEAVY_MODULES if name in modules]
    print(f"imports of {label} (python -X importtime, medians of 5 runs, bytecode cached):")
    print(f"  heavy modules imported: {', '.join(heavy) if heavy else 'none'} (looked for {', '.join(HEAVY_MODULES)})")
    extra = {name: value for name, value in modules.items() if name not in baseline}
    extra_self = sum(self_us for self_us, _, _ in extra.values())
    print(f"  beyond `import click`: {len(extra)} modules, {extra_self / 1e3:.1f} ms of their own import time")
    # The outermost two levels, heaviest first, say where the time goes.
    top = min((depth for _, _, depth in extra.values()), default=0)
    outermost = sorted(
        ((cumulative, name, depth) for name, (_, cumulative, depth) in extra.items() if depth <= top + 1),
        reverse=True,
    )
    for cumulative, name, depth in outermost[:10]:
        print(f"    {cumulative / 1e3:7.1f} ms cumulative  {'  ' * (depth - top)}{name}")
    return heavy


def environments(cache_directory):
    """The start-up conditions to time, by label, as (environment, explanation)."""
    cached = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = cache_directory
    modes = {
        "cached": (cached, "bytecode cached, as after `pip install` (PYTHONPYCACHEPREFIX in a temporary directory)"),
    }
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        modes["as is"] = (
            dict(os.environ),
            "this environment as it is: PYTHONDONTWRITEBYTECODE is set and gradcheck_cli is an editable "
            "install, so its modules are compiled from source at every start (click's come from site-packages' .pyc)",
        )
    return modes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="interleaved runs of each command")
    arguments = parser.parse_args()

    header("start-up: gradcheck quadratic vs python -c 'import click'")
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import click'": [python, "-c", "import click"],
        "python -c 'import gradcheck_cli'": [python, "-c", "import gradcheck_cli"],
        # The floor of any click program: invoking a command costs more than importing click.
        "a one-command click program": [python, "-c", HELLO_CLICK, "--name", "gradcheck"],
    }
    cli_exists = importlib.util.find_spec("gradcheck_cli.cli") is not None
    cli_labels = []
    if not cli_exists:
        print("NOT MEASURED: gradcheck_cli/cli.py does not exist yet, so there is no `gradcheck quadratic`;")
        print("  only the library import is timed below. Re-run this script once the CLI has landed.")
    else:
        cli_labels.append("python -m gradcheck_cli quadratic")
        commands[cli_labels[-1]] = [python, "-m", "gradcheck_cli", "quadratic"]
        script = console_script()
        if script is None:
            print("note: no `gradcheck` console script beside this interpreter or on PATH; timing `python -m` only")
        else:
            cli_labels.append("gradcheck quadratic")
            commands[cli_labels[-1]] = [script, "quadratic"]
            print(f"console script: {script}")
        for label in cli_labels:
            completed = run_once(commands[label])
            if completed.returncode != 0:
                print(f"FAILED: `{label}` exited {completed.returncode}; start-up not measured.")
                print("  " + "\n  ".join(completed.stderr.strip().splitlines()[-5:]))
                return 1

    with tempfile.TemporaryDirectory(prefix="gradcheck-bench-pycache-") as cache_directory:
        modes = environments(cache_directory)
        contenders = {
            (mode, label): timed_process(command, environment)
            for mode, (environment, _) in modes.items()
            for label, command in commands.items()
        }
        started = time.perf_counter()
        timings = interleaved(contenders, arguments.repeats, warmup=2)
        elapsed = time.perf_counter() - started
        print(
            f"{arguments.repeats} interleaved runs of each command in each mode; wall time per process, median (range)"
        )
        width = max(map(len, commands))
        for mode, (environment, explanation) in modes.items():
            print(f"[{mode}] {explanation}")
            click_median = median(timings[mode, "python -c 'import click'"]["wall"])
            for label in commands:
                values = timings[mode, label]["wall"]
                ratio = median(values) / click_median
                goal = f"  {verdict(ratio, GOAL)}" if label in cli_labels else ""
                print(f"  {label:<{width}}  {spread(values)}  ratio to click {ratio:.3f}{goal}")
        print(f"(timing took {seconds(elapsed)})")

        environment = modes["cached"][0]
        baseline = imported_modules(["-c", "import click"], environment)
        if cli_exists:
            report_imports(
                "python -m gradcheck_cli quadratic", ["-m", "gradcheck_cli", "quadratic"], baseline, environment
            )
        report_imports("import gradcheck_cli", ["-c", "import gradcheck_cli"], baseline, environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
