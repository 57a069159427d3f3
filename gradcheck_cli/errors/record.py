"""How an error is a record: its ``fields`` and one message ``template``, nothing else."""

from ..core.formatting import rust_debug, rust_list
from ..core.record import json_ready

__all__ = ["GradCheckError"]

#: The format specs of the messages: ``{step:?}`` a float as Rust's ``{:?}`` prints it (1.0, 1e-20,
#: NaN), ``{shape:list}`` a sequence as Rust's list ([2, 3]), ``{names:join}`` strings joined by ", ".
_SPECS = {"?": rust_debug, "list": rust_list, "join": ", ".join}


_DECLARED = object()


class _Shown:
    """A field's value as a message shows it (``{name!r}`` is its repr)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __format__(self, spec):
        if self.value is _DECLARED:  # a class's template checked as it is declared
            return ""
        return _SPECS[spec](self.value) if spec in _SPECS else format(self.value, spec)

    def __repr__(self):
        return repr(self.value)


class _Named:
    """The names a template may use: the fields, and properties the class derives from them."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __getitem__(self, name):
        owner = self.owner
        if isinstance(owner, type):  # the class being declared: check the name, show nothing
            if name not in owner.fields and not isinstance(getattr(owner, name, None), property):
                raise TypeError(f"{owner.__name__}'s template names {name!r}, which is no field of {owner.fields}")
            return _Shown(_DECLARED)
        return _Shown(getattr(owner, name))


class GradCheckError(ValueError):
    """A rejected numerical derivative, comparison, sample request, or tensor read."""

    fields: tuple = ()
    template: str = ""

    def __init_subclass__(cls, **options):
        super().__init_subclass__(**options)
        cls.template.format_map(_Named(cls))

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
        super().__init__(self.template.format_map(_Named(self)))

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
