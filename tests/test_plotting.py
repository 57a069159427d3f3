"""Plots of the error curve and the text chart (gradcheck_cli/plotting.py).

The figure tests read the data back from the artists (by their gid) before
anything is saved, and compare it with the records it came from; the file
tests check that what lands on disk is a valid PNG (signature and IHDR
chunk) or SVG (parses as XML with an <svg> root).
"""

import math
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from extras import needs
from gradcheck_cli.advice.steps import advise_step
from gradcheck_cli.chapter.fixtures import CUBIC_POINT, cubic, cubic_step_scan
from gradcheck_cli.display.plotting import (
    REGIME_COLORS,
    plot_format,
    plot_scan,
    plot_taylor,
    scan_figure,
    scan_text_chart,
    sparkline,
    taylor_figure,
    taylor_text_chart,
    text_chart,
)
from gradcheck_cli.errors import PlottingUnavailable, UnsupportedPlotFormat
from gradcheck_cli.problem import GradientProblem
from gradcheck_cli.taylor.remainder import check_taylor

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
needs_matplotlib = needs("matplotlib")  # the figures; the text charts and the typed error need none


@pytest.fixture(scope="module")
def records():
    return cubic_step_scan()


@pytest.fixture(scope="module")
def advice():
    return advise_step(cubic, CUBIC_POINT)


@pytest.fixture(scope="module")
def taylor_result():
    x = np.array([0.3, -0.7, 1.1])

    def objective(parameters):
        return float(np.sum(np.cosh(parameters["x"])))

    wrong = np.sinh(x)
    wrong[1] += 0.1
    return check_taylor(GradientProblem(objective, {"x": x}, {"x": wrong}))


def _line(figure, gid):
    lines = [line for line in figure.axes[0].get_lines() if line.get_gid() == gid]
    assert len(lines) == 1, gid
    return lines[0]


def _data(figure, gid):
    line = _line(figure, gid)
    return [float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]


def _spans(figure):
    return [patch for patch in figure.axes[0].patches if (patch.get_gid() or "").startswith("regime-")]


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert chunk == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


def _svg_root(path):
    root = ElementTree.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


@needs_matplotlib
def test_scan_figure_plots_the_records(records, advice):
    figure = scan_figure(records, advice)
    axes = figure.axes[0]
    assert axes.get_xscale() == "log" and axes.get_yscale() == "log"
    xs, ys = _data(figure, "scaled-error")
    assert xs == [record.check.difference.requested_step for record in records]
    assert ys == [record.check.comparison.scaled_error for record in records]
    assert _data(figure, "tolerance")[1] == [1e-6, 1e-6]
    xs, ys = _data(figure, "estimated-error")
    assert xs == [estimate.requested_step for estimate in advice.estimates]
    assert ys == [estimate.scaled_estimated_error for estimate in advice.estimates]
    xs, ys = _data(figure, "rounding-floor")
    assert ys == [
        estimate.rounding_floor / max(1.0, abs(estimate.difference.derivative)) for estimate in advice.estimates
    ]
    assert _data(figure, "advised-step")[0] == [advice.advised_step, advice.advised_step]
    assert _data(figure, "advised-point") == ([advice.advised_step], [advice.scaled_estimated_error])


@needs_matplotlib
def test_scan_figure_shades_each_records_regime(records):
    figure = scan_figure(records)
    spans = _spans(figure)
    assert len(spans) == len(records)
    # Spans are ordered by ascending step; records come largest first.
    from matplotlib.colors import to_rgb

    for span, record in zip(spans, reversed(records)):
        assert to_rgb(span.get_facecolor()) == to_rgb(REGIME_COLORS[record.regime])
        left, right = span.get_x(), span.get_x() + span.get_width()
        assert left < record.check.difference.requested_step < right
    labels = figure.axes[0].get_legend_handles_labels()[1]
    assert {"truncation", "converging", "trusted range", "rounding"} <= set(labels)


@needs_matplotlib
def test_advice_alone_shades_the_advice_regimes(advice):
    figure = scan_figure(advice)
    assert len(_spans(figure)) == len(advice.estimates)
    assert not [line for line in figure.axes[0].get_lines() if line.get_gid() in ("scaled-error", "tolerance")]


@needs_matplotlib
def test_zero_errors_are_left_out_of_a_log_axis():
    from gradcheck_cli.chapter.scan import step_scan

    records = step_scan(lambda theta: theta * theta, 3.0, 6.0, [1.0, 0.5], 1e-6)
    errors = [record.check.comparison.scaled_error for record in records]
    assert 0.0 in errors
    xs, ys = _data(scan_figure(records), "scaled-error")
    assert ys == [error for error in errors if error > 0.0]


@needs_matplotlib
def test_taylor_figure_plots_the_points(taylor_result):
    figure = taylor_figure(taylor_result)
    evaluated = [point for point in taylor_result.points if point.state == "ok" and point.absolute_remainder > 0]
    assert _data(figure, "remainder") == ([p.step for p in evaluated], [p.absolute_remainder for p in evaluated])
    fitted = [point for point in taylor_result.points if point.in_fit]
    assert len(fitted) == taylor_result.fit_points == 5
    assert _data(figure, "fit-window") == ([p.step for p in fitted], [p.absolute_remainder for p in fitted])
    xs, ys = _data(figure, "rounding-threshold")
    assert ys == [taylor_result.rounding_margin * p.rounding_floor for p in evaluated]
    anchor = min(fitted, key=lambda point: point.step)
    for order in (1, 2):
        xs, ys = _data(figure, f"slope-{order}")
        slope = math.log(ys[1] / ys[0]) / math.log(xs[1] / xs[0])
        assert slope == pytest.approx(order, rel=1e-12)
        # The reference line passes through the smallest-step fitted point.
        assert ys[0] * (anchor.step / xs[0]) ** order == pytest.approx(anchor.absolute_remainder, rel=1e-12)


@needs_matplotlib
def test_plot_scan_writes_a_png(tmp_path, records, advice):
    path = tmp_path / "scan.png"
    assert plot_scan(records, path, advice=advice) == "png"
    assert _png_size(path) == (840, 540)  # 7 × 4.5 inches at 120 dpi


@needs_matplotlib
def test_plot_scan_writes_a_deterministic_svg(tmp_path, records, advice):
    first, second = tmp_path / "one.svg", tmp_path / "two.SVG"
    assert plot_scan(records, first, advice=advice) == "svg"
    plot_scan(records, second, advice=advice)
    _svg_root(first)
    assert first.read_bytes() == second.read_bytes()
    assert b"<dc:date>" not in first.read_bytes()


@needs_matplotlib
def test_plot_taylor_writes_png_and_svg(tmp_path, taylor_result):
    assert plot_taylor(taylor_result, tmp_path / "taylor.png") == "png"
    _png_size(tmp_path / "taylor.png")
    assert plot_taylor(taylor_result, tmp_path / "taylor.svg") == "svg"
    _svg_root(tmp_path / "taylor.svg")


@pytest.mark.parametrize("name", ["scan.pdf", "scan", "scan.png.txt"])
def test_unsupported_suffix_is_rejected_before_drawing(tmp_path, records, name):
    with pytest.raises(UnsupportedPlotFormat) as caught:
        plot_scan(records, tmp_path / name)
    assert str(caught.value) == f"plot file {str(tmp_path / name)!r} must end in .png or .svg"
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_is_a_typed_error(monkeypatch, records, taylor_result):
    for module in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(PlottingUnavailable) as caught:
        scan_figure(records)
    assert (
        str(caught.value)
        == "plotting needs matplotlib, which is not installed: pip install matplotlib (make install installs it, the plot extra)"
    )
    with pytest.raises(PlottingUnavailable):
        taylor_figure(taylor_result)


def test_plotting_module_imports_neither_matplotlib_nor_numpy():
    code = (
        "import sys\n"
        "import gradcheck_cli.display.plotting as plotting\n"
        "print(plotting.sparkline([1.0, 10.0, 100.0]))\n"
        "print(sorted(name for name in ('matplotlib', 'numpy') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, encoding="utf-8")
    assert result.stdout.splitlines() == ["▁▅█", "[]"]


def test_plot_format():
    assert plot_format("a/b.PNG") == "png"
    assert plot_format("b.svg") == "svg"


def test_sparkline():
    # log10 values 0, 1, 2 span the eight levels: 0 → ▁, 3.5 rounds to 4 → ▅, 7 → █.
    assert sparkline([1.0, 10.0, 100.0]) == "▁▅█"
    assert sparkline([1e-3, 0.0, math.nan, 1e-3]) == "▄··▄"
    assert sparkline([]) == ""


def test_text_chart_exact_layout():
    # Columns are the x values ascending; rows split log10 y from −6 to −2 in
    # three: 1e-2 on top, 1e-4 in the middle, 1e-6 at the bottom.
    chart = text_chart([([1e-3, 1e-2, 1e-1], [1e-2, 1e-6, 1e-4], "●")], height=3)
    assert chart.splitlines() == [
        "1e-2 ┤●",
        "     ┤  ●",
        "1e-6 ┤ ●",
        "     └───",
        "      h: 1e-3 … 1e-1",
    ]


def test_text_chart_without_data():
    assert text_chart([([1.0], [0.0], "●")]) == "(no positive finite values to chart)"


def test_scan_text_chart_marks_the_advised_step(records, advice):
    chart = scan_text_chart(records, advice)
    assert chart.count("◆") == 1
    assert chart.count("●") == len(records)
    steps = {record.check.difference.requested_step for record in records}
    steps |= {estimate.requested_step for estimate in advice.estimates}
    assert chart.splitlines()[-2].count("─") == len(steps)


def test_taylor_text_chart(taylor_result):
    chart = taylor_text_chart(taylor_result)
    assert chart.count("◆") == taylor_result.fit_points


@needs_matplotlib
@pytest.mark.parametrize("earlier", [None, b"an earlier plot"])
def test_a_plot_that_fails_midway_leaves_no_partial_file(tmp_path, monkeypatch, records, earlier):
    """Issue 30: a full disk mid-write leaves no partial file, and an earlier plot as it was."""
    from matplotlib.figure import Figure

    def half_then_full(figure, file, **keywords):
        file.write(b"\x89PNG half a plot")
        raise OSError(28, "No space left on device")

    path = tmp_path / "scan.png"
    if earlier is not None:
        path.write_bytes(earlier)
    monkeypatch.setattr(Figure, "savefig", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        plot_scan(records, path)
    assert [entry.name for entry in tmp_path.iterdir()] == ([] if earlier is None else ["scan.png"])
    if earlier is not None:
        assert path.read_bytes() == earlier


@needs_matplotlib
def test_a_plot_gets_the_permissions_of_a_new_file(tmp_path, records):
    path = tmp_path / "scan.svg"
    plot_scan(records, path)
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
