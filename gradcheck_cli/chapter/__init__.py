"""The chapter's exact code, bit for bit: its estimator, coordinate sampling, sampled tensor
check, fixtures, step scan, NLL and text lines (its Rust-style number formats are the leaf
module :mod:`gradcheck_cli.formatting`, which the errors' messages use too).

Below it: the leaves and the errors. Only ``sampled`` (and ``nll`` through it) still imports from
above, the probe engine (:mod:`~gradcheck_cli.dtypes`, :mod:`~gradcheck_cli.tensors`' array
validation, :mod:`~gradcheck_cli.sweep`'s probe columns) that it shares with ``check_gradients``
so that the two checks agree bit for bit; tests/test_layout.py lists those imports until the
engine moves into this package. This file imports nothing, so ``gradcheck quadratic`` loads only
the modules it runs.
"""
