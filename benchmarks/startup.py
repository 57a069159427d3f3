"""Start-up: `gradcheck quadratic` and `gradcheck --help` against `python -c "import click"`.

Each command runs as a fresh process, the commands interleaved round after
round (the order rotating), and the ratio of medians is reported. Three
conditions are timed side by side:

- cached: this environment with bytecode cached, as a user has it after
  `pip install` (the goal applies here);
- minimal: a fresh virtual environment where only click and gradcheck_cli
  can be imported and `gradcheck` is the script pip writes. Python itself
  starts in about 10 ms there instead of 30 (no .pth files to process, no
  modules preloaded by site), so every module gradcheck adds weighs more in
  the ratio: the harshest fair condition;
- as is: this environment as it is, where PYTHONDONTWRITEBYTECODE=1 with an
  editable install means gradcheck_cli is compiled from source at every
  start while click's bytecode is cached.

With --baseline PATH (a checkout of an older commit, e.g. `git worktree add
/tmp/old 18c60ed`), a fourth condition runs that checkout's code the cached
way (PYTHONPATH=PATH ahead of this checkout's editable install, same
interpreter, same click), interleaved with the others in the same rounds.

A scalar subcommand must not import numpy or rich, so `python -X importtime`
names the heavy modules imported and what the command imports beyond click.

Usage: python benchmarks/startup.py [--repeats 30] [--baseline PATH]
"""

import argparse
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPOSITORY, header, interleaved, median, seconds, spread, verdict

GOAL = 1.3
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
    return subprocess.run(command, capture_output=True, text=True, env=environment)


def timed_process(command, environment, cpu_times):
    """A zero-argument run of ``command``; appends the child's CPU seconds (user + system) to ``cpu_times``.

    CPU time per process leaves out the stretches when another tenant held
    the core, so on a loaded machine it is the steadier clock.
    """

    def run():
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

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
    # Own (self) time, not cumulative: a module that happens to import click first would carry all of click.
    for self_us, name in sorted(((self_us, name) for name, (self_us, _, _) in extra.items()), reverse=True)[:10]:
        print(f"    {self_us / 1e3:7.2f} ms  {name}")
    return heavy


#: What pip writes as the ``gradcheck`` console script (entry point ``gradcheck_cli.cli.app:main``).
CONSOLE_SCRIPT = """import re
import sys
from gradcheck_cli.cli import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def minimal_environment(directory, cached):
    """A fresh venv in ``directory`` that can import click and gradcheck_cli and nothing else installed.

    Returns (python, console script, environment). The two packages are
    reached through PYTHONPATH (links to this checkout and to click's
    package), so no .pth file of this environment runs and nothing is copied.
    """
    import venv

    import click

    venv.EnvBuilder(with_pip=False, symlinks=True).create(directory)
    python = str(Path(directory) / "bin" / "python")
    packages = Path(directory) / "packages"
    packages.mkdir()
    (packages / "click").symlink_to(Path(click.__file__).parent)
    (packages / "gradcheck_cli").symlink_to(REPOSITORY / "gradcheck_cli")
    script = Path(directory) / "bin" / "gradcheck"
    script.write_text(f"#!{python}\n" + CONSOLE_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    environment = {**cached, "PYTHONPATH": str(packages)}
    return python, str(script), environment


def environments(work_directory, baseline=None):
    """The start-up conditions to time, by label, as (python, console script, environment, explanation)."""
    cache_directory = os.path.join(work_directory, "pycache")
    cached = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = cache_directory
    script = console_script()
    modes = {
        "cached": (
            sys.executable,
            script,
            cached,
            "bytecode cached, as after `pip install` (PYTHONPYCACHEPREFIX in a temporary directory)",
        ),
        "minimal": (
            *minimal_environment(os.path.join(work_directory, "venv"), cached),
            "a fresh venv importing only click and gradcheck_cli, bytecode cached: Python itself starts "
            "fastest here, so this ratio is the harshest",
        ),
    }
    if baseline is not None:
        modes["baseline"] = (
            sys.executable,
            script,
            {**cached, "PYTHONPATH": str(Path(baseline).resolve())},
            f"the code at {baseline} ({baseline_commit(baseline)}), cached as above, PYTHONPATH ahead of this checkout",
        )
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        modes["as is"] = (
            sys.executable,
            script,
            dict(os.environ),
            "this environment as it is: PYTHONDONTWRITEBYTECODE is set and gradcheck_cli is an editable "
            "install, so its modules are compiled from source at every start (click's come from site-packages' .pyc)",
        )
    return modes


def baseline_commit(path) -> str:
    completed = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return completed.stdout.strip() if completed.returncode == 0 else "unknown commit"


def commands_for(python, script, cli_exists):
    """The timed commands (label → argv) for one interpreter; the CLI's only once it exists."""
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import click'": [python, "-c", "import click"],
        "python -c 'import gradcheck_cli'": [python, "-c", "import gradcheck_cli"],
        # The floor of any click program: invoking a command costs more than importing click.
        "a one-command click program": [python, "-c", HELLO_CLICK, "--name", "gradcheck"],
    }
    if cli_exists:
        commands["python -m gradcheck_cli quadratic"] = [python, "-m", "gradcheck_cli", "quadratic"]
        if script is not None:
            commands["gradcheck quadratic"] = [script, "quadratic"]
            commands["gradcheck --help"] = [script, "--help"]
    return commands


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="interleaved runs of each command")
    parser.add_argument("--baseline", metavar="PATH", help="also time the code of this checkout (cached)")
    arguments = parser.parse_args()

    header("start-up: gradcheck quadratic vs python -c 'import click'")
    cli_exists = importlib.util.find_spec("gradcheck_cli.cli.app") is not None
    if not cli_exists:
        print("NOT MEASURED: gradcheck_cli/cli.py does not exist yet, so there is no `gradcheck quadratic`;")
        print("  only the library import is timed below. Re-run this script once the CLI has landed.")

    with tempfile.TemporaryDirectory(prefix="gradcheck-bench-startup-") as work_directory:
        modes = environments(work_directory, arguments.baseline)
        # The commands run in the empty work directory: `python -m` and `python -c` put the working
        # directory first on sys.path, and in this checkout they would import its gradcheck_cli ahead
        # of the baseline's PYTHONPATH.
        started_in = os.getcwd()
        os.chdir(work_directory)
        try:
            return measure(arguments, modes, cli_exists)
        finally:
            os.chdir(started_in)


def measure(arguments, modes, cli_exists) -> int:
    """Time every command of every mode, print the ratios and what `gradcheck quadratic` imports."""
    commands = {mode: commands_for(python, script, cli_exists) for mode, (python, script, _, _) in modes.items()}
    print(f"console script: {modes['cached'][1] or 'none beside this interpreter or on PATH (python -m only)'}")
    for mode, (_, _, environment, _) in modes.items():
        for label, command in commands[mode].items():
            completed = run_once(command, environment)
            if completed.returncode != 0:
                print(f"FAILED: `{label}` [{mode}] exited {completed.returncode}; start-up not measured.")
                print("  " + "\n  ".join(completed.stderr.strip().splitlines()[-5:]))
                return 1
    cpu = {(mode, label): [] for mode in modes for label in commands[mode]}
    contenders = {
        (mode, label): timed_process(command, modes[mode][2], cpu[mode, label])
        for mode in modes
        for label, command in commands[mode].items()
    }
    started = time.perf_counter()
    timings = interleaved(contenders, arguments.repeats, warmup=2)
    elapsed = time.perf_counter() - started
    warm = 2  # the warm-up runs' CPU times come first
    cpu = {key: values[warm:] for key, values in cpu.items()}
    print(
        f"{arguments.repeats} interleaved runs of each command in each mode; wall time per process, median (range);"
        " ratios to click of the wall and of the process's CPU time medians"
    )
    width = max(len(label) for labels in commands.values() for label in labels)
    for mode, (_, _, _, explanation) in modes.items():
        print(f"[{mode}] {explanation}")
        click_median = median(timings[mode, "python -c 'import click'"]["wall"])
        click_cpu = median(cpu[mode, "python -c 'import click'"])
        for label in commands[mode]:
            values = timings[mode, label]["wall"]
            ratio = median(values) / click_median
            cpu_ratio = median(cpu[mode, label]) / click_cpu
            goal = ""
            if "quadratic" in label or "--help" in label:
                # Each round runs both commands, so the median of per-round ratios cancels slow drifts.
                clicks = timings[mode, "python -c 'import click'"]["wall"]
                paired = median([one / two for one, two in zip(values, clicks)])
                goal = f", paired {paired:.3f}  {verdict(ratio, GOAL)}"
            print(f"  {label:<{width}}  {spread(values)}  ratio to click {ratio:.3f} (CPU {cpu_ratio:.3f}){goal}")
    if "baseline" in modes:
        for label in ("gradcheck quadratic", "gradcheck --help", "python -m gradcheck_cli quadratic"):
            if ("cached", label) in timings:
                wall = median(timings["cached", label]["wall"]) / median(timings["baseline", label]["wall"])
                own = median(cpu["cached", label]) / median(cpu["baseline", label])
                print(f"  {label}: this code ÷ the baseline, cached: wall {wall:.3f}, CPU {own:.3f}")
    print(f"(timing took {seconds(elapsed)})")

    environment = modes["cached"][2]
    baseline = imported_modules(["-c", "import click"], environment)
    if cli_exists:
        report_imports("python -m gradcheck_cli quadratic", ["-m", "gradcheck_cli", "quadratic"], baseline, environment)
    report_imports("import gradcheck_cli", ["-c", "import gradcheck_cli"], baseline, environment)
    return 0


if __name__ == "__main__":
    sys.exit(main())
