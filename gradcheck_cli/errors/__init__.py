"""Typed errors: one class per rejected request, with the chapter's messages.

A mathematical mismatch is not an error (it is a comparison with ``passed=False``); these are
requests the checker refuses to answer. Every error is a record (``record.py``): its ``fields``,
keyword arguments in the order ``to_dict()`` writes them, and one message ``template``, floats
printed as the chapter's Rust ``{:?}`` prints them.
"""

from . import requests, user_code
from .record import GradCheckError
from .requests import *  # noqa: F403
from .user_code import *  # noqa: F403

__all__ = ["GradCheckError", *requests.__all__, *user_code.__all__]
