"""``python -m gradcheck_cli``: the same command as ``gradcheck``."""

from .cli.app import main

main(prog_name="gradcheck")
