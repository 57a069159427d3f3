"""How gradcheck shows a result: ``output`` (the one output layer: stdout, stderr, the JSON writer),
``render`` (text lines and sections), ``chapter_lines`` (the chapter's text lines), ``tables`` (rich
tables), ``progress`` (the progress bar) and ``plotting`` (figures and text charts). Only ``tables``
and ``progress`` import rich, and only when they draw."""
