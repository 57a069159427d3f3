"""The chapter's number formats: how Rust prints an f64; a leaf module, since the errors' messages
(``{step:?}``) use them as the chapter's text lines do.

The chapter's demo prints with four Rust format specifiers. Python's own
formatting is correctly rounded, as Rust's is, so each one is Python's
closest format with Rust's spelling of exponents and non-finite values.
`tests/data/rust-float-formats.tsv` (from the course's spec) is the acceptance table.
"""

import math

__all__ = ["rust_debug", "rust_exp", "rust_fixed", "rust_list", "short_repr", "did_you_mean", "escaped", "shown_name"]


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "inf" if value > 0 else "-inf"


def _rust_exponent(python_text: str) -> str:
    mantissa, exponent = python_text.split("e")
    return f"{mantissa}e{int(exponent)}"


def rust_exp(value: float, precision: int) -> str:
    """Rust's ``{:.Ne}``: ``rust_exp(0.1, 17) == "1.00000000000000006e-1"``."""
    if not math.isfinite(value):
        return _non_finite(value)
    return _rust_exponent(f"{value:.{precision}e}")


def rust_fixed(value: float, precision: int = 12) -> str:
    """Rust's ``{:.N}``: ``rust_fixed(2.775268796472) == "2.775268796472"``."""
    if not math.isfinite(value):
        return _non_finite(value)
    return f"{value:.{precision}f}"


def rust_debug(value: float) -> str:
    """Rust's ``{:?}`` for f64: the shortest round-trip digits.

    Rust writes plain decimals for 1e-4 <= |x| < 1e16 (always with a
    fractional part, as in ``1.0``) and exponent notation elsewhere, with no
    ``+`` and no trailing ``.0`` on a one-digit mantissa (``1e-20``, ``1e16``).
    """
    if isinstance(value, bool) or not isinstance(value, float):
        value = float(value)
    if not math.isfinite(value):
        return _non_finite(value)
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    magnitude = abs(value)
    if magnitude == 0.0:
        return f"{sign}0.0"
    digits, exponent = _shortest_digits(magnitude)
    if 1e-4 <= magnitude < 1e16:
        point = len(digits) + exponent  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    scientific = exponent + len(digits) - 1
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{scientific}"


def _shortest_digits(magnitude: float) -> tuple:
    """(digits, exponent) with magnitude == int(digits) * 10**exponent, from repr's shortest digits.

    repr() already finds the shortest digits that round-trip (as Rust does);
    only their layout differs. No trailing zeros in ``digits``.
    """
    mantissa, _, exponent = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    exponent = int(exponent or 0) - len(fraction)
    significant = digits.rstrip("0")
    return significant, exponent + len(digits) - len(significant)


def rust_list(values) -> str:
    """Rust's ``{:?}`` for a Vec: ``[0, 2]``, ``[0.0, 1.0]``, ``[[0, 0], [0, 1]]``."""
    parts = []
    for value in values:
        if isinstance(value, (list, tuple)):
            parts.append(rust_list(value))
        elif isinstance(value, float):
            parts.append(rust_debug(value))
        else:
            parts.append(str(value))
    return f"[{', '.join(parts)}]"


def short_repr(value, limit: int = 40) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters (10**400 has 401 digits)."""
    try:
        text = repr(value)
    except Exception:  # a value whose __repr__ raises still has a type
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


def did_you_mean(word: str, candidates) -> str:
    """`` (did you mean 'samples' or 'sampler'?)`` with the candidates close to ``word``, closest first
    (at most three; difflib's ratio at least 0.7), or "" when none is."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=3, cutoff=0.7)
    return " (did you mean " + " or ".join(repr(name) for name in close) + "?)" if close else ""


def escaped(text: str) -> str:
    """``text`` with every character that is not printable spelt as its Python escape: control
    characters (``\\x1b``, ``\\r``, ``\\x00``), bidi controls (``\\u202e``), zero-width characters
    (``\\u200b``), line and paragraph separators. What the user's code supplies (an exception's
    message and type, a file or function name, an address) is printed through it: it cannot move the
    cursor, recolour a log, reverse a line or hide a character."""
    if text.isprintable():
        return text
    return "".join(each if each.isprintable() else each.encode("unicode_escape").decode("ascii") for each in text)


#: The characters that make a field or a line's label in the text format (``key=value``, ``label:``,
#: the quotes of a list's names): a name that holds one is quoted. Brackets, parentheses and dots
#: (``inputs[0]``, ``l1.weight``, torch's and JAX's own names) cannot, and are shown as given.
_FIELD_MARKS = frozenset("=:\"'\\")


def shown_name(name: str) -> str:
    """A name (a parameter's) as text shows it: as given when it is one printable word, else its repr
    with ``=`` spelt ``\\x3d`` (``'a b'``, ``'a\\nb'``, ``'x\\x3d1'``: each still a Python string of
    the name), so that it can be read neither as another line nor as a ``key=value`` field, and sends
    no terminal escapes."""
    if name and name.isprintable() and not any(each.isspace() or each in _FIELD_MARKS for each in name):
        return name
    return repr(name).replace("=", "\\x3d")
