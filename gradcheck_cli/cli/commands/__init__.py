"""One module per subcommand: ``gradcheck X`` is defined in ``commands/X.py`` and loaded only when it runs."""
