"""The shared base of every result: one ``to_dict()`` for the frozen dataclasses.

Every command's start-up imports this module (errors are records too), so the modules that only
some results need, dataclasses and struct, are imported where they are used.
"""

import math
from collections.abc import Sequence

__all__ = [
    "Record",
    "field_names",
    "json_fields",
    "JSON_KEYS",
    "records_from_rows",
    "json_ready",
    "float_bits",
    "same_bits",
]


def float_bits(value: float) -> int:
    """The IEEE binary64 bit pattern of ``value`` as an unsigned integer.

    Unlike ``==``, it tells −0.0 from 0.0 and one NaN payload from another,
    and NaN equals itself: what "the objective returned the same value"
    means when checking purity.
    """
    import struct

    return struct.unpack("<Q", struct.pack("<d", value))[0]


def same_bits(first: float, second: float) -> bool:
    """Whether two floats are bit-identical (see :func:`float_bits`)."""
    return float_bits(first) == float_bits(second)


def json_ready(value):
    """Convert a result value to plain JSON types.

    Non-finite floats become the strings ``"NaN"``, ``"inf"`` and ``"-inf"``
    (RFC 8259 has no token for them); finite floats stay floats, so
    ``json.dumps`` writes their repr and every value round-trips bit-exactly.
    A long result sequence (a parameter's CoordinateChecks) becomes a list.
    """
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_ready(item) for key, item in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Sequence):
        return [json_ready(item) for item in value]
    raise TypeError(f"{type(value).__name__} is not a result value")


def records_from_rows(cls, rows) -> list:
    """One record of the frozen dataclass ``cls`` per row of its field values, in field order.

    The same records as ``[cls(*row) for row in rows]``, equal, hashed, printed, pickled and
    replaced alike, built without ``__init__``: a frozen dataclass sets each field through
    ``object.__setattr__``, which is most of the cost of a check that makes records by the
    thousand. Only for rows already of the fields' types (nothing is validated) and a class
    without ``__post_init__``.
    """
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__: build it with its constructor")
    names = field_names(cls)
    new, records = object.__new__, []
    add = records.append
    if "__slots__" in cls.__dict__:
        setters = tuple(getattr(cls, name).__set__ for name in names)
        for row in rows:
            record = new(cls)
            for setter, value in zip(setters, row):
                setter(record, value)
            add(record)
    else:
        for row in rows:
            record = new(cls)
            record.__dict__.update(zip(names, row))
            add(record)
    return records


class Record:
    """The mixin of every result, a ``@dataclass(frozen=True)``: ``to_dict()`` of its fields, JSON-ready.

    A record's JSON keys are the words its text prints (``key=value``), one vocabulary for both: a
    field's own name, unless :data:`JSON_KEYS` (every record) or the class's ``json_keys`` names it
    otherwise (the chapter's ``point`` is ``theta``, as the chapter's lines print it).
    """

    __slots__ = ()  # so that a result declared with slots=True has no instance dictionary

    #: Field name → JSON key, where the text prints another word than the field's name.
    json_keys = {}

    def to_dict(self) -> dict:
        """``{JSON key: json_ready(value)}`` in field order."""
        return {key: json_ready(getattr(self, name)) for name, key in json_fields(type(self))}


#: The JSON keys of every record whose field of that name the text prints by another word.
JSON_KEYS = dict(passed="pass")

_FIELD_NAMES = {}
_JSON_FIELDS = {}


def json_fields(cls) -> tuple:
    """``(field name, JSON key)`` of each of a record class's fields, in order (read once per class)."""
    fields = _JSON_FIELDS.get(cls)
    if fields is None:
        own = getattr(cls, "json_keys", {})
        fields = _JSON_FIELDS[cls] = tuple(
            (name, own.get(name, JSON_KEYS.get(name, name))) for name in field_names(cls)
        )
    return fields


def field_names(cls) -> tuple:
    """The names of a dataclass's fields, in order (``dataclasses.fields``, read once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        import dataclasses

        names = _FIELD_NAMES[cls] = tuple(field.name for field in dataclasses.fields(cls))
    return names
