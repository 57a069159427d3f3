"""The command line: ``app`` (the click group, exit statuses and what every subcommand shares) and
``commands/`` (one module per subcommand, loaded only when it runs)."""

from .app import main

__all__ = ["main"]
