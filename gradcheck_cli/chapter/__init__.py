"""The chapter's demos, above the probe engine: its scalar fixtures (``fixtures``: quadratic, the rounded
identity, the |x| kink), the step scan (``scan``), the sampled tensor check (``sampled``) and the NLL
example (``nll``). Only the chapter's commands import it; its text lines are ``display.chapter_lines``.

This file imports nothing, so ``gradcheck quadratic`` loads only the modules it runs.
"""
