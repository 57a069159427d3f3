"""The chapter's text lines: its number formats and the lines of its commands (quadratic, identity,
kink, scan, nll, sample), byte for byte as the chapter prints them."""

from ..core.formatting import rust_debug, rust_exp, rust_fixed, rust_list

__all__ = [
    "value_text",
    "magnitude_text",
    "spacing_text",
    "error_text",
    "bool_text",
    "quadratic_lines",
    "kink_lines",
    "scan_lines",
    "sample_lines",
    "parameter_sample_lines",
    "nll_lines",
    "rejected_lines",
    "difference_lines",
    "comparison_line",
    "check_lines",
    "coordinate_check_lines",
    "slopes_line",
]


def value_text(number: float) -> str:
    """Values, slopes, gradients: Rust ``{:.12}``."""
    return rust_fixed(number, 12)


def magnitude_text(number: float) -> str:
    """A gradient in ``check``'s text: ``{:.12}``, or ``{:.12e}`` for a nonzero magnitude below 1e-4."""
    return error_text(number) if 0.0 < abs(number) < 1e-4 else value_text(number)


def spacing_text(number: float) -> str:
    """Requested steps, spacings, weights: Rust ``{:.17e}``."""
    return rust_exp(number, 17)


def error_text(number: float) -> str:
    """Errors and tolerances: Rust ``{:.12e}``."""
    return rust_exp(number, 12)


def bool_text(flag: bool) -> str:
    return "true" if flag else "false"


def difference_lines(label: str, difference) -> list:
    """A CentralDifference as the chapter's ``quadratic:`` line plus a probes line."""
    d = difference
    return [
        f"{label}: theta={value_text(d.point)} requested_h={spacing_text(d.requested_step)} "
        f"actual_h_minus={spacing_text(d.minus_spacing)} actual_h_plus={spacing_text(d.plus_spacing)} "
        f"f_minus={value_text(d.minus_value)} f_center={value_text(d.center_value)} f_plus={value_text(d.plus_value)} "
        f"left_slope={value_text(d.left_slope)} right_slope={value_text(d.right_slope)} "
        f"left_weight={spacing_text(d.left_weight)} right_weight={spacing_text(d.right_weight)} "
        f"numerical={value_text(d.derivative)}",
        # {:?}, not {:.12}: the probes are where the rounding shows (1.0000000000000002 is not 1.0).
        f"{label} probes: theta_minus={rust_debug(d.minus_point)} theta_plus={rust_debug(d.plus_point)} "
        f"stencil={d.stencil}",
    ]


def comparison_line(label: str, comparison, value=value_text) -> str:
    """A GradientComparison as the chapter's ``wrong candidate:`` line."""
    c = comparison
    return (
        f"{label}: analytic={value(c.analytic)} scaled_error={error_text(c.scaled_error)} "
        f"tolerance={error_text(c.tolerance)} pass={bool_text(c.passed)}"
    )


def check_lines(label: str, check, candidate_label: str = None) -> list:
    """A ScalarGradientCheck: its difference lines, then its candidate line."""
    return [
        *difference_lines(label, check.difference),
        comparison_line(candidate_label or f"{label} candidate", check.comparison),
    ]


def coordinate_check_lines(label: str, record) -> list:
    """A check's coordinate as the chapter prints it (its ``pass=`` is the chapter's scaled error against
    the tolerance, not the coordinate's verdict, which its own line gives), small gradients in scientific
    notation."""
    return [
        *difference_lines(label, record.difference),
        comparison_line(f"{label} candidate", record.comparison, magnitude_text),
    ]


def slopes_line(label: str, slopes) -> str:
    """A OneSidedSlopeComparison: both slopes, their scaled gap, and whether they agree."""
    return (
        f"{label}: left={value_text(slopes.left)} right={value_text(slopes.right)} "
        f"scaled_gap={error_text(slopes.scaled_gap)} tolerance={error_text(slopes.tolerance)} "
        f"consistent={bool_text(slopes.consistent)}"
    )


def quadratic_lines(checks, labels) -> list:
    lines, shown = [], None
    for check, label in zip(checks, labels):
        # Every candidate is compared with the same central difference; print it once.
        if check.difference != shown:
            lines += difference_lines("quadratic", check.difference)
            shown = check.difference
        lines.append(comparison_line(label, check.comparison))
    return lines


def kink_lines(diagnostic) -> list:
    return [*check_lines("kink", diagnostic.check), slopes_line("kink one-sided slopes", diagnostic.slopes)]


def scan_lines(records) -> list:
    lines = []
    for number, record in enumerate(records, start=1):
        label = f"scan step {number}"
        if record.check is None:
            lines.append(f"{label} rejected: requested_h={spacing_text(record.requested_step)} error={record.error}")
        else:
            lines += check_lines(label, record.check)
        lines.append(f"{label} regime: {record.regime}")
    return lines


def sample_lines(coordinates, label: str = "") -> list:
    return [
        f"{label}sampled flat offsets: {rust_list([sample.flat_index for sample in coordinates])}",
        f"{label}sampled coordinates: {rust_list([sample.coordinate for sample in coordinates])}",
    ]


def parameter_sample_lines(samples) -> list:
    lines = []
    for chosen in samples:
        requested = "" if chosen.requested_samples is None else f" requested_samples={chosen.requested_samples}"
        lines += [
            f"{chosen.name}: dtype={chosen.dtype} shape={rust_list(chosen.shape)} selection={chosen.selection}{requested}",
            *sample_lines(chosen.coordinates, f"{chosen.name} "),
        ]
    return lines


def nll_lines(example) -> list:
    check = example.check
    values = "omitted" if example.logits is None else rust_list(example.logits)
    lines = [
        f"nll logits: shape={rust_list(example.shape)} values={values} "
        f"targets={rust_list(example.targets)} loss={value_text(example.loss)}",
        f"nll analytic path: {example.analytic_path}",
        *sample_lines(check.checks),
    ]
    for coordinate_check in check.checks:
        lines += check_lines(f"coordinate {rust_list(coordinate_check.coordinate)}", coordinate_check)
    lines += [
        f"nll check: shape={rust_list(check.shape)} requested_samples={check.requested_samples} "
        f"pass={bool_text(check.passed)}",
        f"tensor restored exactly: {bool_text(example.restored_exactly)}",
    ]
    return lines


def rejected_lines(errors, labels) -> list:
    return [f"rejected {labels.get(request, request)}: {error}" for request, error in errors.items()]
