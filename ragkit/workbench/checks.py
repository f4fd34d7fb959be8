"""Parameter checks shared by the notebooks' parameter classes."""

from __future__ import annotations

from ..errors import InputError


def check_type(name: str, value, kind) -> None:
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(f"parameter {name}: expected {expected}, got {value!r}")

