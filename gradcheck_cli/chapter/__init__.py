"""The chapter's exact code, bit for bit: its estimator, coordinate sampling, the probe engine
(dtypes, tensors' array validation and write-back, sweep's probe columns) that its sampled tensor
check shares with ``check_gradients`` so that the two agree bit for bit, the sampled check,
fixtures, step scan, NLL and text lines (its Rust-style number formats are the leaf module
:mod:`gradcheck_cli.formatting`, which the errors' messages use too).

Below it: the leaves and the errors; nothing in it imports from above. This file imports nothing,
so ``gradcheck quadratic`` loads only the modules it runs.
"""
