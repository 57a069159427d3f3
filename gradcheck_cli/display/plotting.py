"""Pictures of the error curve: matplotlib figures and a pure-text chart.

matplotlib is an optional extra (the ``plot`` extra, which ``make install`` installs) and
is imported only inside the figure functions; without it they raise
:class:`~gradcheck_cli.errors.PlottingUnavailable`. Figures are built with
the object-oriented API on an Agg canvas: pyplot is never imported, no
window ever opens, and no global figure state is touched. The file format
follows the path's suffix (``.png`` or ``.svg``); SVG output carries no date
and fixed element ids, so the same records give the same bytes.

The text charts (:func:`sparkline`, :func:`text_chart`,
:func:`scan_text_chart`, :func:`taylor_text_chart`) need nothing but
``math``; they are for ``--format table``.

Every displayed step is the REQUESTED step, as in the chapter's scan; the
estimates behind the points use the actual probes.
"""

import contextlib
import math
import os
from pathlib import Path

from ..errors import PlottingUnavailable, UnsupportedPlotFormat

__all__ = [
    "PLOT_FORMATS",
    "REGIME_COLORS",
    "plot_format",
    "scan_figure",
    "plot_scan",
    "taylor_figure",
    "plot_taylor",
    "save_figure",
    "sparkline",
    "text_chart",
    "scan_text_chart",
    "taylor_text_chart",
]

PLOT_FORMATS = {".png": "png", ".svg": "svg"}

REGIME_COLORS = {
    "truncation": "#d95f02",
    "converging": "#7570b3",
    "trusted range": "#1b9e77",
    "advised": "#1b9e77",
    "crossover": "#7f7f7f",
    "rounding": "#e7298a",
}

_SPARK_LEVELS = "▁▂▃▄▅▆▇█"


def plot_format(path) -> str:
    """The file format for ``path`` (``png`` or ``svg``, by suffix, any case)."""
    suffix = Path(path).suffix.lower()
    if suffix not in PLOT_FORMATS:
        raise UnsupportedPlotFormat(path=str(path))
    return PLOT_FORMATS[suffix]


def _new_figure(size=(7.0, 4.5)):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlottingUnavailable() from None
    figure = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def save_figure(figure, path) -> str:
    """Write ``figure`` to ``path`` in the format its suffix names, atomically: into a temporary file
    beside it, then renamed over it, so that a failure (a full disk) leaves no partial file and an
    earlier ``path`` as it was; returns the format."""
    import tempfile

    file_format = plot_format(path)
    import matplotlib

    metadata = {"Date": None} if file_format == "svg" else {}
    directory, name = os.path.split(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=directory)
    try:
        settings = {"svg.hashsalt": "gradcheck", "svg.fonttype": "path"}
        with os.fdopen(descriptor, "wb") as file, matplotlib.rc_context(settings):
            figure.savefig(file, format=file_format, metadata=metadata, dpi=120)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp's file is the owner's alone; a plot is not
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return file_format


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _positive(xs, ys):
    """The (x, y) pairs a log-log axis can show: both finite and positive."""
    pairs = [(x, y) for x, y in zip(xs, ys) if _loggable(x) and _loggable(y)]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _loggable(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0


def _shade_regimes(axes, steps, regimes):
    """Shade each step's regime from halfway (in log h) to its neighbours."""
    order = sorted(range(len(steps)), key=lambda index: steps[index])
    logs = [math.log(steps[index]) for index in order]
    shown = set()
    for rank, index in enumerate(order):
        below = logs[rank - 1] if rank > 0 else None
        above = logs[rank + 1] if rank + 1 < len(order) else None
        half_below = (
            (logs[rank] - below) / 2 if below is not None else ((above - logs[rank]) / 2 if above is not None else 0.5)
        )
        half_above = (above - logs[rank]) / 2 if above is not None else half_below
        regime = regimes[index]
        axes.axvspan(
            math.exp(logs[rank] - half_below),
            math.exp(logs[rank] + half_above),
            color=REGIME_COLORS.get(regime, "#bbbbbb"),
            alpha=0.12,
            linewidth=0,
            label=regime if regime not in shown else None,
            gid=f"regime-{rank}",
        )
        shown.add(regime)


def scan_figure(records=(), advice=None):
    """The scan's error curve as a matplotlib Figure (not saved).

    Parameters
    ----------
    records : sequence of StepScanRecord, or a StepAdvice
        The chapter's scan (scaled error against the analytic candidate).
        A :class:`~gradcheck_cli.advice.steps.StepAdvice` here is taken as
        ``advice`` with no scan.
    advice : StepAdvice, optional
        Adds the estimated scaled error, the scaled rounding floor and the
        advised step.

    Returns
    -------
    matplotlib.figure.Figure
        One log-log axes. Artists carry ids for reading the data back:
        lines ``scaled-error``, ``estimated-error``, ``rounding-floor``,
        ``tolerance``, ``advised-step``, ``advised-point``; spans
        ``regime-0`` … (the scan's regimes, or the advice's without a scan).
        Points with a zero or non-finite value are left out (a log axis
        cannot show them).
    """
    from ..advice.steps import StepAdvice

    if isinstance(records, StepAdvice):
        records, advice = (), records
    records = [record for record in records if record.check is not None]  # not the rejected steps
    if not records and advice is None:
        raise ValueError("scan_figure needs scan records, step advice, or both")
    figure = _new_figure()
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")

    if records:
        steps = [record.check.difference.requested_step for record in records]
        errors = [record.check.comparison.scaled_error for record in records]
        _shade_regimes(axes, steps, [record.regime for record in records])
        xs, ys = _positive(steps, errors)
        axes.plot(xs, ys, marker="o", color="#1f3b73", label="scaled error (analytic)", gid="scaled-error")
        tolerance = records[0].check.comparison.tolerance
        if tolerance > 0.0:
            axes.axhline(tolerance, color="#444444", linestyle="--", linewidth=1.0, label="tolerance", gid="tolerance")
    elif advice is not None:
        _shade_regimes(
            axes,
            [estimate.requested_step for estimate in advice.estimates],
            [estimate.regime for estimate in advice.estimates],
        )

    if advice is not None:
        _draw_advice(axes, advice)

    axes.set_xlabel("requested step h")
    axes.set_ylabel("scaled error")
    point = records[0].check.difference.point if records else advice.point
    axes.set_title(f"step-size scan at θ = {point!r}")
    axes.legend(fontsize="small", loc="best")
    return figure


def _draw_advice(axes, advice) -> None:
    """The advice's estimated scaled error, its scaled rounding floor and the advised step."""
    steps = [estimate.requested_step for estimate in advice.estimates]
    scales = [max(1.0, abs(estimate.difference.derivative)) for estimate in advice.estimates]
    xs, ys = _positive(steps, [estimate.scaled_estimated_error for estimate in advice.estimates])
    axes.plot(
        xs, ys, marker=".", linestyle="-", color="#b35806", label="estimated error (no analytic)", gid="estimated-error"
    )
    xs, ys = _positive(steps, [estimate.rounding_floor / scale for estimate, scale in zip(advice.estimates, scales)])
    axes.plot(xs, ys, linestyle=":", color="#7f7f7f", label="rounding floor ε|f|/h", gid="rounding-floor")
    axes.axvline(advice.advised_step, color="#1b9e77", linewidth=1.5, label="advised step", gid="advised-step")
    if _loggable(advice.scaled_estimated_error):
        axes.plot(
            [advice.advised_step],
            [advice.scaled_estimated_error],
            marker="*",
            markersize=12,
            linestyle="none",
            color="#1b9e77",
            gid="advised-point",
        )


def plot_scan(records, path, *, advice=None) -> str:
    """Draw :func:`scan_figure` into ``path`` (``.png`` or ``.svg``); returns the format."""
    plot_format(path)
    return save_figure(scan_figure(records, advice), path)


def taylor_figure(result):
    """The Taylor remainder against the requested step, as a matplotlib Figure.

    Lines (by id): ``remainder`` (|R| at every evaluated step with R ≠ 0),
    ``fit-window`` (the fitted points), ``rounding-threshold`` (10·ρ, the
    usability threshold), ``slope-1`` and ``slope-2`` (reference slopes
    through the smallest-step fitted point, or the smallest usable one).
    """
    figure = _new_figure()
    axes = figure.add_subplot()
    axes.set_xscale("log")
    axes.set_yscale("log")
    evaluated = [point for point in result.points if point.state == "ok"]
    xs, ys = _positive([point.step for point in evaluated], [point.absolute_remainder for point in evaluated])
    axes.plot(xs, ys, marker="o", markersize=4, color="#1f3b73", label="remainder |R(h)|", gid="remainder")
    fitted = [point for point in evaluated if point.in_fit]
    fx, fy = _positive([point.step for point in fitted], [point.absolute_remainder for point in fitted])
    axes.plot(
        fx,
        fy,
        marker="o",
        markersize=8,
        linestyle="none",
        markerfacecolor="none",
        color="#d95f02",
        label=f"fitted window (order {result.order:.2f})",
        gid="fit-window",
    )
    tx, ty = _positive(
        [point.step for point in evaluated], [result.rounding_margin * point.rounding_floor for point in evaluated]
    )
    axes.plot(
        tx,
        ty,
        linestyle="--",
        color="#7f7f7f",
        label=f"{result.rounding_margin:g}× rounding floor",
        gid="rounding-threshold",
    )

    anchors = fitted or [point for point in evaluated if point.usable] or evaluated
    anchors = [point for point in anchors if _loggable(point.absolute_remainder)]
    if anchors and xs:
        anchor = min(anchors, key=lambda point: point.step)
        low, high = min(ys) / 10.0, max(ys) * 10.0
        for order, style in ((1, "-."), (2, ":")):
            # Keep each reference line within a decade of the data, so that it
            # does not stretch the y axis.
            span = [
                max(min(xs), anchor.step * (low / anchor.absolute_remainder) ** (1.0 / order)),
                min(max(xs), anchor.step * (high / anchor.absolute_remainder) ** (1.0 / order)),
            ]
            axes.plot(
                span,
                [anchor.absolute_remainder * (step / anchor.step) ** order for step in span],
                linestyle=style,
                color="#444444",
                linewidth=1.0,
                label=f"slope {order}",
                gid=f"slope-{order}",
            )
    axes.set_xlabel("requested step h along the unit direction")
    axes.set_ylabel("|f(x+Δ) − f(x) − g·Δ|")
    axes.set_title(f"Taylor remainder: {result.verdict} ({result.reason})")
    axes.legend(fontsize="small", loc="best")
    return figure


def plot_taylor(result, path) -> str:
    """Draw :func:`taylor_figure` into ``path`` (``.png`` or ``.svg``); returns the format."""
    plot_format(path)
    return save_figure(taylor_figure(result), path)


def sparkline(values) -> str:
    """One character per value on a log scale (▁ smallest … █ largest; · for 0 or non-finite)."""
    logs = [math.log10(value) if _loggable(value) else None for value in values]
    present = [value for value in logs if value is not None]
    if not present:
        return "·" * len(logs)
    low, high = min(present), max(present)
    top = len(_SPARK_LEVELS) - 1
    characters = []
    for value in logs:
        if value is None:
            characters.append("·")
        elif high == low:
            characters.append(_SPARK_LEVELS[top // 2])
        else:
            characters.append(_SPARK_LEVELS[round((value - low) / (high - low) * top)])
    return "".join(characters)


def _short(value: float) -> str:
    text = f"{value:.0e}"
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


def text_chart(series, *, height: int = 8) -> str:
    """A small log-log chart as text: one column per distinct x, ascending.

    Parameters
    ----------
    series : sequence of (xs, ys, mark)
        Each series' positive finite points are drawn with its one-character
        mark; a later series overwrites an earlier one in a shared cell.
    height : int
        Rows of the plotting area (at least 2).

    Returns
    -------
    str
        ``height`` rows with the top and bottom y values labelled, an axis
        row, and the smallest and largest x under it. No trailing newline.
    """
    height = max(2, int(height))
    points = [(x, y, mark) for xs, ys, mark in series for x, y in zip(xs, ys) if _loggable(x) and _loggable(y)]
    if not points:
        return "(no positive finite values to chart)"
    columns = sorted({x for x, _, _ in points})
    column_of = {x: index for index, x in enumerate(columns)}
    low = min(math.log10(y) for _, y, _ in points)
    high = max(math.log10(y) for _, y, _ in points)
    grid = [[" "] * len(columns) for _ in range(height)]
    for x, y, mark in points:
        row = 0 if high == low else round((math.log10(y) - low) / (high - low) * (height - 1))
        grid[height - 1 - row][column_of[x]] = mark
    top, bottom = _short(10.0**high), _short(10.0**low)
    margin = max(len(top), len(bottom))
    lines = []
    for index, cells in enumerate(grid):
        label = top if index == 0 else (bottom if index == height - 1 else "")
        lines.append(f"{label:>{margin}} ┤{''.join(cells)}".rstrip())
    lines.append(" " * margin + " └" + "─" * len(columns))
    lines.append(" " * margin + f"  h: {_short(columns[0])} … {_short(columns[-1])}")
    return "\n".join(lines)


def scan_text_chart(records=(), advice=None, *, height: int = 8) -> str:
    """The scan's curve as text: ● scaled error, ○ estimated error, ◆ the advised step."""
    from ..advice.steps import StepAdvice

    if isinstance(records, StepAdvice):
        records, advice = (), records
    series = []
    if advice is not None:
        series.append(
            (
                [estimate.requested_step for estimate in advice.estimates],
                [estimate.scaled_estimated_error for estimate in advice.estimates],
                "○",
            )
        )
    records = [record for record in records if record.check is not None]  # not the rejected steps
    if records:
        series.append(
            (
                [record.check.difference.requested_step for record in records],
                [record.check.comparison.scaled_error for record in records],
                "●",
            )
        )
    if advice is not None:
        series.append(([advice.advised_step], [advice.scaled_estimated_error], "◆"))
    return text_chart(series, height=height)


def taylor_text_chart(result, *, height: int = 8) -> str:
    """The Taylor remainder as text: · evaluated, ● usable, ◆ fitted."""
    evaluated = [point for point in result.points if point.state == "ok"]
    series = [
        ([point.step for point in evaluated], [point.absolute_remainder for point in evaluated], "·"),
        ([p.step for p in evaluated if p.usable], [p.absolute_remainder for p in evaluated if p.usable], "●"),
        ([p.step for p in evaluated if p.in_fit], [p.absolute_remainder for p in evaluated if p.in_fit], "◆"),
    ]
    return text_chart(series, height=height)
