"""Every way gradcheck shows a result: chapter-style text lines, strict JSON, rich tables.

A command hands the library's results to one of the section builders below (:func:`quadratic`,
:func:`scan`, :func:`nll`, ...); :func:`write` then prints the sections in the requested format.

- ``text``: ``label: key=value ...`` lines in the chapter's number formats
  (``{:.12}`` for values, slopes and gradients, ``{:.17e}`` for requested
  steps, spacings and weights, ``{:.12e}`` for errors and tolerances, ``{:?}``
  for probe points and lists, ``pass=true|false``); no colour, stable for
  golden diffs.
- ``json``: one strict JSON document, ``{section key: to_dict() of its
  results}``, written by :func:`output.json_text` and nothing else.
- ``table``: rich tables for people, drawn by :mod:`tables` (the only
  module importing rich), which is imported only when a table is drawn, so
  text and JSON output never pay for it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..core.formatting import rust_debug, rust_list, shown_name
from ..errors.command_line import in_flags
from ..verdict.words import DEFAULT_STEP, FAILED, check_summary, coordinate_verdict, diagnosis_text, kink_tolerance_text
from .chapter_lines import (
    bool_text,
    check_lines,
    comparison_line,
    coordinate_check_lines,
    difference_lines,
    error_text,
    kink_lines,
    magnitude_text,
    nll_lines,
    parameter_sample_lines,
    quadratic_lines,
    rejected_lines,
    sample_lines,
    scan_lines,
    slopes_line,
    spacing_text,
    value_text,
)
from .output import emit, json_chunks, json_text

__all__ = [
    "FORMATS",
    "DEFAULT_STEP",
    "check_summary",
    "coordinate_verdict",
    "kink_tolerance_text",
    "Section",
    "render",
    "write",
    "difference_lines",
    "comparison_line",
    "check_lines",
    "slopes_line",
    "scalar_check",
    "quadratic",
    "identity",
    "kink",
    "scan",
    "nll",
    "sample",
    "parameter_samples",
    "rejected",
    "check",
    "step_advice",
    "taylor",
    "schema_list",
    "schema_document",
]

FORMATS = ("text", "json", "table")


class Section(NamedTuple):
    """One part of a command's output: its JSON key, its results, and how to draw them.

    ``results`` is a library result (anything with ``to_dict()``), or a list
    or dict of them; ``lines`` and ``table`` draw the same results as text
    lines and as a rich renderable.
    """

    key: str
    results: object
    lines: Callable[[], list]
    table: Callable[[], object]


# ---------------------------------------------------------------- writers


def _tables():
    """The table side of every section: :mod:`tables`, imported on first use (it loads rich)."""
    from . import tables

    return tables


def render(sections: Sequence[Section], output_format: str, stream=None) -> str:
    """The whole output of ``sections`` as text, JSON or tables, as one string.

    Rendered completely before anything is written, so an interruption or a
    failure while rendering leaves stdout empty. ``stream`` is where the
    output will go (a terminal's tables get its width and colour).
    """
    return "".join(render_chunks(sections, output_format, stream))


def render_chunks(sections: Sequence[Section], output_format: str, stream=None):
    """The output of ``sections`` as an iterator of strings, made as they are asked for.

    JSON and text are produced piece by piece (a parameter's coordinates are turned into records,
    dictionaries and lines one at a time), so an output far larger than memory can be written as
    it is made; tables are one piece.
    """
    if output_format == "json":
        return json_chunks({section.key: section.results for section in sections})
    if output_format == "table":
        return iter(
            [_tables().render([section.table() for section in sections], sys.stdout if stream is None else stream)]
        )
    return (line + "\n" for section in sections for line in section.lines())


def write(sections: Sequence[Section], output_format: str, stream=None) -> None:
    """Print ``sections`` to ``stream`` (stdout by default) as text, JSON or tables, in one write."""
    emit(render(sections, output_format, stream), stream)


# ------------------------------------------------------------- text lines


def _names(names) -> str:
    """Names as Rust's ``{:?}`` prints a Vec<String>: ``["W1", "b1"]``."""
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def _coordinate_label(parameter, coordinate) -> str:
    """``W1[0, 3]`` (a complex parameter's part: ``z[0, 3].imag``): how the library's purity messages name a coordinate."""
    from ..engine.complex_parts import coordinate_text  # a check's report: numpy is loaded already

    return f"{parameter.name}{coordinate_text(coordinate, parameter.dtype)}"


def _purity_line(purity) -> str:
    return (
        f"purity: pure={bool_text(purity.pure)} stateful={bool_text(purity.stateful)} evaluations={purity.evaluations} "
        f"distinct={purity.distinct} spread={error_text(purity.spread)}; {purity.message}"
    )


def _parameter_line(parameter) -> str:
    selection = f"selection={parameter.selection}"
    if parameter.requested_samples is not None:
        selection += f" requested_samples={parameter.requested_samples}"
    step = "default" if parameter.step is None else spacing_text(parameter.step)
    return (
        f"parameter {parameter.name}: dtype={parameter.dtype} shape={rust_list(parameter.shape)} {selection} "
        f"step={step} tolerance={error_text(parameter.tolerance)} kink_tolerance={kink_tolerance_text(parameter)}"
    )


def estimate_fields(estimate) -> str:
    """A JudgedEstimate's numbers: what was compared at that step, and the error bar."""
    bar = estimate.error_bar
    return (
        f"analytic={magnitude_text(estimate.analytic)} numerical={magnitude_text(estimate.numerical)} "
        f"relative_error={error_text(estimate.relative_error)} error_bar={error_text(bar.total)} "
        f"(rounding={error_text(bar.rounding)} jitter={error_text(bar.jitter)} step_sensitivity={error_text(bar.step_sensitivity)})"
    )


def _verdict_lines(label: str, record, step_name: str) -> list:
    lines = [f"{label} {step_name}={spacing_text(e.step)}: {estimate_fields(e)}" for e in record.estimates[1:]]
    return [*lines, f"{label} verdict: {coordinate_verdict(record)}; {in_flags(record.reason)}"]


def _directional_lines(parameter) -> list:
    direction, label = parameter.directional, f"{parameter.name} directional"
    joint = f" joint={_names(map(shown_name, direction.joint))}" if direction.joint else ""  # the text's names
    lines = [f"{label}: elements={direction.elements} moved={direction.moved}{joint}"]
    lines += [f"{label} multiplier={spacing_text(e.step)}: {estimate_fields(e)}" for e in direction.estimates]
    return [*lines, f"{label} verdict: {direction.verdict}; {in_flags(direction.reason)}"]


#: Coordinates that did not pass shown per parameter in the short report (``--verbose`` shows all).
SHOWN_FAILURES = 3


def _summary_line(parameter) -> str:
    checks, direction, failed = parameter.checks, parameter.directional, parameter.checks.verdict_count(FAILED)
    worst = checks.worst() if len(checks) else None  # none in a fast check's parameter: the directional test's
    decided = worst.estimates[worst.decided_at] if worst else (direction.estimates or (None,))[direction.decided_at]
    return (
        f"{parameter.name}: verdict={parameter.verdict} dtype={parameter.dtype} shape={rust_list(parameter.shape)} "
        f"checked={len(checks)} failed={failed} inconclusive={len(checks.unpassed()) - failed} "
        f"directional={direction.verdict}"
        + (f" worst={_coordinate_label(parameter, worst.coordinate)}" if worst else "")
        + ("" if decided is None else f" relative_error={error_text(decided.relative_error)}")
    )


def diagnosis_line(label: str, diagnosis) -> str:
    """``W2 diagnosis: scale ×8: analytic = 8 × numerical ...``."""
    return f"{label} diagnosis: {in_flags(diagnosis_text(diagnosis))}"


def _short_coordinate_line(parameter, record) -> str:
    estimate = record.estimates[record.decided_at]
    return (
        f"{_coordinate_label(parameter, record.coordinate)}: {coordinate_verdict(record, short=True)} "
        f"analytic={magnitude_text(estimate.analytic)} numerical={magnitude_text(estimate.numerical)} "
        f"relative_error={error_text(estimate.relative_error)} error_bar={compact_error(estimate.error_bar.total)} "
        f"step={rust_debug(estimate.step)}"
    )


def compact_error(number: float) -> str:
    """An error bar in three digits: ``2.43e-11``."""
    return f"{number:.2e}"


def _short_check_lines(report) -> list:
    """One line per parameter, its diagnosis, and the first coordinates that did not pass."""
    lines = []
    for parameter in report.parameters:
        lines.append(_summary_line(parameter))
        if parameter.diagnosis is not None:
            lines.append(diagnosis_line(parameter.name, parameter.diagnosis))
        unpassed = parameter.checks.unpassed()
        lines += [_short_coordinate_line(parameter, record) for record in unpassed[:SHOWN_FAILURES]]
        if len(unpassed) > SHOWN_FAILURES:
            more = len(unpassed) - SHOWN_FAILURES
            lines.append(
                f"{parameter.name}: {more} more {'coordinate' if more == 1 else 'coordinates'} did not pass "
                "(--verbose shows every one)"
            )
    if report.diagnosis is not None:
        lines.append(diagnosis_line("check", report.diagnosis))
    return [*lines, *_check_tail(report)]


def _check_tail(report) -> list:
    return [
        _purity_line(report.purity),
        f"check: checked={report.checked} failed={report.failed} inconclusive={report.inconclusive} "
        f"failing_parameters={_names(report.failing_parameters)} evaluations={report.evaluations} "
        f"verdict={report.verdict} pass={bool_text(report.passed)}",
    ]


def _check_lines(report):
    """Every line of a verbose check, made one coordinate at a time (a generator)."""
    if report.step_advice is not None:
        yield from _problem_step_advice_lines(report.step_advice)
    for parameter in report.parameters:
        yield _parameter_line(parameter)
        for record in parameter.checks:
            label = _coordinate_label(parameter, record.coordinate)
            yield from coordinate_check_lines(label, record)
            if record.kink.suspected:
                yield slopes_line(f"{label} one-sided slopes", record.kink.slopes)
            yield from _verdict_lines(label, record, "step")
        yield from _directional_lines(parameter)
        if parameter.diagnosis is not None:
            yield diagnosis_line(parameter.name, parameter.diagnosis)
        yield (
            f"{parameter.name} check: checked={len(parameter.checks)} failed={parameter.checks.verdict_count(FAILED)} "
            f"verdict={parameter.verdict} pass={bool_text(parameter.passed)}"
        )
    if report.diagnosis is not None:
        yield diagnosis_line("check", report.diagnosis)
    yield from _check_tail(report)


def _advice_line(label: str, advice, coordinate=None) -> str:
    """A StepAdvice's verdict on one line (``coordinate`` for a tensor coordinate's advice)."""
    where = "" if coordinate is None else f"coordinate={rust_list(coordinate)} "
    return (
        f"{label}: {where}point={value_text(advice.point)} dtype={advice.dtype} "
        f"advised_step={spacing_text(advice.advised_step)} derivative={value_text(advice.derivative)} "
        f"estimated_error={error_text(advice.estimated_error)} "
        f"scaled_estimated_error={error_text(advice.scaled_estimated_error)} "
        f"advised_at_edge={bool_text(advice.advised_at_edge)} deterministic={bool_text(advice.deterministic)}"
    )


def _step_advice_lines(label: str, advice) -> list:
    lines = []
    for number, estimate in enumerate(advice.estimates, start=1):
        step_label = f"{label} step {number}"
        lines += difference_lines(step_label, estimate.difference)
        lines.append(
            f"{step_label} estimate: truncation_estimate={error_text(estimate.truncation_estimate)} "
            f"rounding_floor={error_text(estimate.rounding_floor)} estimated_error={error_text(estimate.estimated_error)} "
            f"scaled_estimated_error={error_text(estimate.scaled_estimated_error)} regime={estimate.regime}"
        )
    for rejected in advice.rejected:
        lines.append(
            f"{label} rejected step: requested_h={spacing_text(rejected.requested_step)} error={rejected.error}"
        )
    lines.append(_advice_line(label, advice))
    return lines


def _problem_step_advice_lines(problem_advice) -> list:
    return [
        _advice_line(f"step advice {record.name}", record.advice, record.coordinate)
        for record in problem_advice.parameters
    ]


#: Steps the short taylor output shows when none is in the fit (``--verbose`` shows every one).
SHOWN_TAYLOR_POINTS = 5


def _shown_taylor_points(result) -> tuple:
    """(numbered points to show, what they are): those in the fit, else the first usable ones, else the first."""
    numbered = list(enumerate(result.points, start=1))
    for label, chosen in (
        ("those in the fit", [pair for pair in numbered if pair[1].in_fit]),
        ("the first usable ones", [pair for pair in numbered if pair[1].usable][:SHOWN_TAYLOR_POINTS]),
        ("the first ones", numbered[:SHOWN_TAYLOR_POINTS]),
    ):
        if chosen:
            return chosen, label
    return [], "the first ones"


def _taylor_lines(result, verbose: bool = False) -> list:
    lines = [
        f"taylor: parameters={_names(result.parameters)} dtypes={_names(result.dtypes)} "
        f"direction={result.direction} seed={result.seed} center_value={value_text(result.center_value)} "
        f"directional_derivative={value_text(result.directional_derivative)} epsilon={error_text(result.epsilon)}"
    ]
    numbered, label = list(enumerate(result.points, start=1)), ""
    if not verbose:
        numbered, label = _shown_taylor_points(result)
    for number, point in numbered:
        lines.append(
            f"taylor step {number}: step={spacing_text(point.step)} displacement_norm={spacing_text(point.displacement_norm)} "
            f"value={value_text(point.value)} linear_term={error_text(point.linear_term)} "
            f"remainder={error_text(point.remainder)} rounding_floor={error_text(point.rounding_floor)} "
            f"state={point.state} usable={bool_text(point.usable)} in_fit={bool_text(point.in_fit)}"
        )
    if len(numbered) < len(result.points):
        lines.append(
            f"taylor steps: {len(numbered)} of {len(result.points)} shown, {label} (--verbose shows every one)"
        )
    lines += [
        f"taylor fit: fit_points={result.fit_points} order={value_text(result.order)} "
        f"pass_order={value_text(result.pass_order)} fail_order={value_text(result.fail_order)} "
        f"rounding_margin={value_text(result.rounding_margin)} detection_limit={error_text(result.detection_limit)} "
        f"deterministic={bool_text(result.deterministic)}",
    ]
    for number, test in enumerate(result.localization, start=1):
        lines.append(
            f"taylor localization {number}: parameters={_names(test.parameters)} order={value_text(test.order)} "
            f"verdict={test.verdict} ({test.reason}) evaluations={test.evaluations}"
        )
    lines.append(
        f"taylor verdict: {result.verdict} ({result.reason}) pass={bool_text(result.passed)} "
        f"failing_parameters={_names(result.failing_parameters)} "
        f"localization_evaluations={result.localization_evaluations}"
    )
    return lines


# -------------------------------------------------------- section builders


def quadratic(checks: Sequence, labels: Sequence[str]) -> Section:
    """Quadratic checks (ScalarGradientCheck), one label per candidate line."""
    checks, labels = list(checks), list(labels)
    return Section(
        "quadratic", checks, lambda: quadratic_lines(checks, labels), lambda: _tables().quadratic(checks, labels)
    )


def scalar_check(key: str, check, title: str = None) -> Section:
    """Any ScalarGradientCheck, under ``key`` in JSON and as the label of its text lines."""
    return Section(key, check, lambda: check_lines(key, check), lambda: _tables().scalar(title or key, check))


def identity(check) -> Section:
    """The rounded identity's ScalarGradientCheck."""
    return scalar_check("identity", check, "Rounded identity f(x) = x")


def kink(diagnostic) -> Section:
    """The |x| KinkDiagnostic: the check and the one-sided slope comparison."""
    return Section("kink", diagnostic, lambda: kink_lines(diagnostic), lambda: _tables().kink(diagnostic))


def scan(records: Sequence, advice=None) -> Section:
    """StepScanRecords, each with its error regime; the table's chart also shows ``advice`` if given."""
    records = list(records)
    return Section("scan", records, lambda: scan_lines(records), lambda: _tables().scan(records, advice))


def nll(example) -> Section:
    """The NllGradientExample: inputs, loss, sampled coordinate checks, restoration."""
    return Section("nll", example, lambda: nll_lines(example), lambda: _tables().nll(example))


def sample(coordinates: Sequence) -> Section:
    """SampledCoordinates from the deterministic sampler."""
    coordinates = list(coordinates)
    return Section("sample", coordinates, lambda: sample_lines(coordinates), lambda: _tables().sample(coordinates))


def parameter_samples(samples: Sequence) -> Section:
    """``gradcheck sample PROBLEM``: per parameter (ParameterSample), the coordinates a check probes."""
    return Section(
        "sample", samples, lambda: parameter_sample_lines(samples), lambda: _tables().parameter_samples(samples)
    )


def rejected(errors: Mapping[str, Exception], labels: Mapping[str, str] = None) -> Section:
    """Rejected requests: request key (JSON) → the GradCheckError it raised; ``labels`` name them in text."""
    errors, labels = dict(errors), dict(labels or {})
    return Section(
        "rejected", errors, lambda: rejected_lines(errors, labels), lambda: _tables().rejected(errors, labels)
    )


def check(report, verbose: bool = False) -> Section:
    """A GradientCheckReport: a line per parameter with its diagnosis and the coordinates that did not
    pass, then purity and the verdict; ``verbose``: the step advice and every coordinate's records."""
    shown = _check_with_shown_names(report)
    lines = (lambda: _check_lines(shown)) if verbose else (lambda: _short_check_lines(shown))
    return Section("check", report, lines, lambda: _tables().check(shown))


def step_advice(advice, key: str = "advice", title: str = "Step advice") -> Section:
    """A StepAdvice: every requested step's estimate and regime, then the advised step."""
    return Section(key, advice, lambda: _step_advice_lines(key, advice), lambda: _tables().step_advice(title, advice))


def schema_list(entries: Sequence) -> Section:
    """``gradcheck schema``: one ``name: title: description`` line per document."""
    return Section(
        "schemas",
        entries,
        lambda: [f"{entry['name']}: {entry['description']}" for entry in entries],
        lambda: _tables().schema_list(entries),
    )


def schema_document(name: str, document: dict) -> Section:
    """``gradcheck schema NAME``: the schema itself as text, ``{"schema": ...}`` as JSON, its fields as tables."""
    return Section("schema", document, lambda: json_text(document).splitlines(), lambda: _tables().schema_fields(name))


def taylor(result, verbose: bool = False) -> Section:
    """A TaylorResult: the setting, every step's remainder, the fit and the verdict."""
    shown = _taylor_with_shown_names(result)
    return Section("taylor", result, lambda: _taylor_lines(shown, verbose), lambda: _tables().taylor(shown))


def _check_with_shown_names(report):
    """``report`` with every parameter name as :func:`shown_name` shows it (JSON keeps the names as given)."""
    if all(shown_name(name) == name for name in report.failing_parameters + tuple(p.name for p in report.parameters)):
        return report
    parameters = tuple(
        dataclasses.replace(parameter, name=shown_name(parameter.name)) for parameter in report.parameters
    )
    advice = report.step_advice
    if advice is not None:
        records = tuple(dataclasses.replace(record, name=shown_name(record.name)) for record in advice.parameters)
        steps = {shown_name(name): step for name, step in advice.steps.items()}
        advice = dataclasses.replace(advice, steps=steps, parameters=records)
    failing = tuple(map(shown_name, report.failing_parameters))
    return dataclasses.replace(report, parameters=parameters, failing_parameters=failing, step_advice=advice)


def _taylor_with_shown_names(result):
    """``result`` with every parameter name as :func:`shown_name` shows it."""
    if all(shown_name(name) == name for name in result.parameters):
        return result
    localization = tuple(
        dataclasses.replace(test, parameters=tuple(map(shown_name, test.parameters))) for test in result.localization
    )
    return dataclasses.replace(
        result,
        parameters=tuple(map(shown_name, result.parameters)),
        failing_parameters=tuple(map(shown_name, result.failing_parameters)),
        localization=localization,
    )
