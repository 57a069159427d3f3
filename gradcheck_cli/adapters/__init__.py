"""What turns torch and JAX code into a gradient problem: ``torch/`` (views of a tensor's own memory,
the calls of the user's function, the problems of each order and mode) and ``jax/`` (the calls and the
problems). Their public faces are :mod:`gradcheck_cli.torch` and :mod:`gradcheck_cli.jax`."""
