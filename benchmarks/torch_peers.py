"""Against torch.autograd.gradcheck, on the same hand-written autograd Functions (needs torch).

The functions are examples/torch_functions.py's GELU, layer norm, softmax
cross-entropy and attention head, each correct and with its one bug, in
float64 and float32, plus a larger attention head (64 tokens of width 64,
head size 16: 7168 input elements) to show how each tool grows with the
input. Three checkers run on each:

* gradcheck: ``gradcheck_cli.torch.check_function`` at its defaults (16
  sampled coordinates per input, 3 forward calls each, one analytic call);
* torch: ``torch.autograd.gradcheck`` at its defaults (the full Jacobian:
  2 forward calls per input element, one backward per output element);
* torch fast: ``torch.autograd.gradcheck(..., fast_mode=True)`` (one random
  projection on each side).

Every checker's forward calls of ``fn`` are counted; the time of each is the
median CPU time of interleaved runs of the correct version, with torch on one
thread (these functions are far too small to gain from more, and CPU time
leaves out the stretches another tenant holds the core), and the ratios are
torch's time over gradcheck's, in the same run. torch's gradcheck is
"designed for double": in float32 its verdicts are printed as they come,
warnings silenced. Nothing is asserted.

Usage: python benchmarks/torch_peers.py [--repeats 5] [--no-large]
"""

import argparse
import sys
import warnings
from pathlib import Path

from _common import header, interleaved, median, seconds

try:
    import torch
except ImportError:
    print(
        "torch_peers.py: torch is not installed (pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu, its CPU build); nothing to compare"
    )
    sys.exit(0)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import torch_functions  # noqa: E402

from gradcheck_cli.torch import check_function  # noqa: E402


def large_attention(dtype=torch.float64, wrong=False):
    """(fn, inputs): one attention head over 64 tokens of width 64, head size 16."""
    generator = torch.Generator().manual_seed(4)
    shapes, scales = [(64, 64), (64, 16), (64, 16), (64, 16)], [1.0, 0.125, 0.125, 0.125]
    inputs = tuple(
        (torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype).requires_grad_()
        for shape, scale in zip(shapes, scales)
    )
    return (lambda x, wq, wk, wv: torch_functions.AttentionHead.apply(x, wq, wk, wv, wrong)), inputs


def checkers():
    def ours(fn, inputs):
        return check_function(fn, inputs).passed

    def torchs(fn, inputs, **options):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # float32: "not a double precision floating point"
            return torch.autograd.gradcheck(fn, inputs, raise_exception=False, **options)

    return {"gradcheck": ours, "torch": torchs, "torch fast": lambda fn, inputs: torchs(fn, inputs, fast_mode=True)}


def counted(fn, calls):
    def call(*arguments):
        calls[0] += 1
        return fn(*arguments)

    return call


def one_case(make, dtype, repeats):
    """Calls and verdicts of every checker on the correct and wrong versions, and the correct one's times."""
    row = {}
    for name, checker in checkers().items():
        for wrong in (False, True):
            fn, inputs = make(dtype, wrong=wrong)
            calls = [0]
            passed = checker(counted(fn, calls), inputs)
            row[name, wrong] = (calls[0], "pass" if passed else "FAIL")
    fn, inputs = make(dtype)
    times = interleaved({name: lambda c=checker: c(fn, inputs) for name, checker in checkers().items()}, repeats)
    return row, {name: median(durations["cpu"]) for name, durations in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-large", action="store_true", help="leave out the 7168-element attention head")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    header(
        "torch peers: hand-written autograd Functions",
        torch=f"{torch.__version__} ({torch.get_num_threads()} threads)",
    )
    cases = [(name, make) for name, make in torch_functions.FUNCTIONS.items()]
    if not arguments.no_large:
        cases.append(("attention 64x64", large_attention))
    print(
        "\n| Function | dtype | forward calls: gradcheck / torch / torch fast | gradcheck CPU time "
        "| torch ÷ gradcheck | torch fast ÷ gradcheck | correct: gradcheck / torch / fast "
        "| wrong: gradcheck / torch / fast |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dtype in (torch.float64, torch.float32):
        for name, make in cases:
            row, times = one_case(make, dtype, arguments.repeats)
            calls = " / ".join(str(row[checker, False][0]) for checker in ("gradcheck", "torch", "torch fast"))
            right = " / ".join(row[checker, False][1] for checker in ("gradcheck", "torch", "torch fast"))
            wrong = " / ".join(row[checker, True][1] for checker in ("gradcheck", "torch", "torch fast"))
            print(
                f"| {name} | {str(dtype).removeprefix('torch.')} | {calls} | {seconds(times['gradcheck'])} "
                f"| {times['torch'] / times['gradcheck']:.2f} | {times['torch fast'] / times['gradcheck']:.2f} "
                f"| {right} | {wrong} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
