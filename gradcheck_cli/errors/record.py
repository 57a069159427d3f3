"""How an error is a record: its ``fields`` and one message ``template``, nothing else."""

import string

from ..formatting import rust_debug, rust_list
from ..records import json_ready

__all__ = ["GradCheckError"]


class _Template(string.Formatter):
    """``str.format`` with the conversions of the messages: ``!d`` a float as Rust's ``{:?}`` prints
    it (1.0, 1e-20, NaN), ``!l`` a sequence as Rust's list ([2, 3]), ``!j`` strings joined by ", "."""

    def convert_field(self, value, conversion):
        if conversion == "d":
            return rust_debug(value)
        if conversion == "l":
            return rust_list(value)
        if conversion == "j":
            return ", ".join(value)
        return super().convert_field(value, conversion)

    def get_value(self, key, args, error):
        return getattr(error, key)  # a field, or a property the class derives from its fields


_TEMPLATE = _Template()


class GradCheckError(ValueError):
    """A rejected numerical derivative, comparison, sample request, or tensor read."""

    fields: tuple = ()
    template: str = ""

    def __init_subclass__(cls, **options):
        super().__init_subclass__(**options)
        for _, name, _, _ in _TEMPLATE.parse(cls.template):
            if name is not None and name not in cls.fields and not isinstance(getattr(cls, name, None), property):
                raise TypeError(f"{cls.__name__}'s template names {name!r}, which is no field of {cls.fields}")

    def __init__(self, **values):
        missing = set(self.fields) - set(values)
        unknown = set(values) - set(self.fields)
        if missing or unknown:
            raise TypeError(
                f"{type(self).__name__} takes fields {self.fields}, "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}"
            )
        for name, value in values.items():
            setattr(self, name, value)
        if isinstance(values.get("source"), BaseException):  # a wrapper (AtCoordinate, ...): its cause is what it wraps
            self.__cause__ = values["source"]
        super().__init__(_TEMPLATE.vformat(self.template, (), self))

    def __reduce__(self):
        return (_rebuild, (type(self), {name: getattr(self, name) for name in self.fields}))

    def to_dict(self) -> dict:
        """``kind`` (the class name), the fields, and the message, JSON-ready."""
        record = {"kind": type(self).__name__}
        for name in self.fields:
            record[name] = json_ready(getattr(self, name))
        record["message"] = str(self)
        return record


def _rebuild(cls, values):
    return cls(**values)
