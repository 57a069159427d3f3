"""The chapter's exact code, bit for bit: its estimator, coordinate sampling, sampled tensor
check, fixtures, step scan, NLL, Rust-style number formats and text lines.

Only ``sampled`` reaches outside the core: it shares :mod:`~gradcheck_cli.tensors`' array
validation and :mod:`~gradcheck_cli.sweep`'s probe columns with ``check_gradients``, so that the
two checks agree bit for bit. This file imports nothing, so ``gradcheck quadratic`` loads only
the modules it runs.
"""
