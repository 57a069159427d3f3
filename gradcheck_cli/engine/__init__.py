"""The probe engine: the chapter's estimator (``estimator``), probes in a parameter's own dtype
(``dtypes``), the deterministic coordinates (``sampling``), array validation and bit-exact write-back
(``tensors``), every coordinate's probes as numpy columns (``sweep``), whole-array passes a block at a
time (``blocks``), a user's problem (``problem``) and the deterministic cotangents (``cotangents``).

Below it: ``core`` and ``errors``. The chapter's demos (``chapter/``) and every check are built on it.
"""
