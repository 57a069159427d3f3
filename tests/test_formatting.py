"""Rust's f64 formats, against the table rustc produced (shared/spec/rust-float-formats.tsv)."""

import csv
import math
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck_cli.core.formatting import rust_debug, rust_exp, rust_fixed, rust_list

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "rust-float-formats.tsv"
LOCAL_COPY = Path(__file__).resolve().parent / "data" / "rust-float-formats.tsv"


def _rows():
    path = SPEC if SPEC.exists() else LOCAL_COPY
    with path.open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [(struct.unpack(">d", bytes.fromhex(row["value_bits"]))[0], row) for row in rows]


ROWS = _rows()


def test_the_table_is_the_spec_table():
    # The local copy keeps the suite runnable without shared/; it must not drift.
    if SPEC.exists():
        assert SPEC.read_text() == LOCAL_COPY.read_text()
    assert len(ROWS) == 28


@pytest.mark.parametrize("value, row", ROWS, ids=[row["value_bits"] for _, row in ROWS])
def test_every_rustc_format(value, row):
    assert rust_debug(value) == row["debug"]
    assert rust_exp(value, 17) == row["lower_exp_17"]
    assert rust_exp(value, 12) == row["lower_exp_12"]
    assert rust_fixed(value, 12) == row["fixed_12"]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_debug_round_trips_every_finite_float(value):
    text = rust_debug(value)
    assert float(text) == value
    assert math.copysign(1.0, float(text)) == math.copysign(1.0, value)
    assert "+" not in text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_debug_layout_follows_rusts_threshold(value):
    # Plain decimals for 1e-4 <= |x| < 1e16 (and zero), exponent notation elsewhere.
    plain = value == 0.0 or 1e-4 <= abs(value) < 1e16
    assert ("e" not in rust_debug(value)) == plain


def test_lists_print_like_rust_vec_debug():
    assert rust_list([2, 3]) == "[2, 3]"
    assert rust_list([0.0, 1.0, -1.0, 2.0]) == "[0.0, 1.0, -1.0, 2.0]"
    assert rust_list([[0, 0], [1, 2]]) == "[[0, 0], [1, 2]]"
    assert rust_list([]) == "[]"


def test_a_name_is_quoted_only_when_it_could_make_a_field_or_a_label():
    from gradcheck_cli.core.formatting import shown_name

    for name in ("W1", "inputs[0]", "l1.weight", "layers[2].bias"):  # torch's and JAX's own names
        assert shown_name(name) == name
    assert shown_name("check: pass=true") == "'check: pass\\x3dtrue'"
    assert shown_name("a b") == "'a b'" and shown_name("") == "''" and shown_name('a"b') == "'a\"b'"
