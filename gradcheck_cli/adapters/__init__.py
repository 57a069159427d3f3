"""What turns torch and JAX code into a gradient problem: ``torch`` (with ``torch_views``, numpy views of
a tensor's own memory) and ``jax``. Their public faces are :mod:`gradcheck_cli.torch` and
:mod:`gradcheck_cli.jax`."""
