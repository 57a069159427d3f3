"""How to install each optional package, one line each: the library's messages and the test suite's
skip messages name the same command. torch's line is its CPU build (docs/torch.md): plain ``pip install
torch``, and so ``pip install -e '.[torch]'``, downloads gigabytes of CUDA libraries."""

__all__ = ["TORCH_CPU", "COMMANDS", "INSTALL"]

TORCH_CPU = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"

#: The command that installs each optional module (by the name it is imported by), as CI installs it.
COMMANDS = {
    "torch": TORCH_CPU,
    "expecttest": "pip install expecttest",
    "jax": "pip install jax==0.6.2",
    "distributed": "pip install distributed==2026.8.0",
    "ml_dtypes": "pip install ml_dtypes",
    "matplotlib": "pip install matplotlib",
    "scipy": "pip install scipy",
}
_NOTES = {
    "torch": "its CPU build; docs/torch.md",
    "expecttest": "torch's OpInfo database imports it",
    "jax": "the CPU build, jaxlib with it; docs/jax.md",
    "distributed": "docs/parallel.md",
    "ml_dtypes": "make install installs it, the bfloat16 extra",
    "matplotlib": "make install installs it, the plot extra",
    "scipy": "jax installs it",
}
#: Each command with a word on it: what messages print.
INSTALL = {module: f"{command} ({_NOTES[module]})" for module, command in COMMANDS.items()}
