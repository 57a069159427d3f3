"""The shared base of every result: frozen fields and one ``to_dict()``."""

import math

__all__ = ["Record", "record", "json_ready", "float_bits", "same_bits"]


def float_bits(value: float) -> int:
    """The IEEE binary64 bit pattern of ``value`` as an unsigned integer.

    Unlike ``==``, it tells −0.0 from 0.0 and one NaN payload from another,
    and NaN equals itself: what "the objective returned the same value"
    means when checking purity.
    """
    import struct  # only purity checks need it; start-up does not

    return struct.unpack("<Q", struct.pack("<d", value))[0]


def same_bits(first: float, second: float) -> bool:
    """Whether two floats are bit-identical (see :func:`float_bits`)."""
    return float_bits(first) == float_bits(second)


def json_ready(value):
    """Convert a result value to plain JSON types.

    Non-finite floats become the strings ``"NaN"``, ``"inf"`` and ``"-inf"``
    (RFC 8259 has no token for them); finite floats stay floats, so
    ``json.dumps`` writes their repr and every value round-trips bit-exactly.
    """
    if isinstance(value, Record):
        return value.to_dict()
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
    raise TypeError(f"{type(value).__name__} is not a result value")


class Record:
    """Base of the frozen results: immutability, equality, hash, repr and ``to_dict()``, shared.

    Subclasses are declared with :func:`record`, which makes them dataclasses
    (``dataclasses.fields`` and ``dataclasses.replace`` work) whose fields are
    listed in ``_field_names``.
    """

    __slots__ = ()
    _field_names: tuple = ()

    def __setattr__(self, name, value):
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple:
        return tuple(self.__dict__[name] for name in self._field_names)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self):
        return hash(self._values())

    def __repr__(self):
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self._field_names, self._values()))
        return f"{type(self).__qualname__}({fields})"

    def to_dict(self) -> dict:
        return {name: json_ready(value) for name, value in zip(self._field_names, self._values())}

    def __replace__(self, **changes):
        """``copy.replace(record, field=value)`` (Python 3.13), as on any dataclass."""
        return type(self)(**{**dict(zip(self._field_names, self._values())), **changes})


class _DataclassFields:
    """A record's ``__dataclass_fields__``, made on first use.

    ``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` all
    start by reading this attribute; the first read runs
    ``dataclasses.dataclass`` on the class, which stores the real one in the
    class's own dictionary, so the descriptor is never consulted again for it.
    Until then neither the ``dataclasses`` module nor its per-class work
    (about 0.7 ms and 55 µs a class) is paid at start-up.
    """

    def __get__(self, instance, owner):
        if owner is Record or "_field_names" not in owner.__dict__:  # only classes declared with @record
            raise AttributeError("__dataclass_fields__")
        import dataclasses

        dataclasses.dataclass(init=False, repr=False, eq=False)(owner)
        return owner.__dict__["__dataclass_fields__"]


Record.__dataclass_fields__ = _DataclassFields()


def record(cls):
    """Declare a :class:`Record` subclass: a frozen dataclass, built cheaply.

    ``@dataclass(frozen=True)`` compiles six methods for every class, about
    0.5 ms each class at import, and start-up matters here (``gradcheck
    quadratic`` must start almost as fast as click). Here the fields are the
    class's annotations in order, the shared methods come from
    :class:`Record`, and only ``__init__`` is compiled; it installs the
    instance dictionary in one call, past the frozen ``__setattr__``. The
    dataclass machinery itself runs on first use (see
    :class:`_DataclassFields`). A record extends :class:`Record` directly,
    and every annotation is a field (no defaults, no ``ClassVar``).
    """
    if cls.__bases__ != (Record,):
        raise TypeError(f"record {cls.__qualname__} must extend Record directly, not {cls.__bases__}")
    names = tuple(cls.__annotations__)  # the class's own annotations (Python 3.10+)
    shared = [name for name in names if "ClassVar" in str(cls.__annotations__[name]) or name in cls.__dict__]
    if shared:
        raise TypeError(f"record {cls.__qualname__} takes no class variables or defaults: {shared}")
    cls._field_names = names
    cls.__match_args__ = names
    source = (
        f"def __init__(self, {', '.join(names)}):\n"
        f"    _store(self, '__dict__', {{{', '.join(f'{name!r}: {name}' for name in names)}}})\n"
    )
    namespace = {"_store": object.__setattr__}
    exec(source, namespace)
    namespace["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = namespace["__init__"]
    return cls
