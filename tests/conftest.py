import os
import signal

from hypothesis import settings

# CI machines are shared and noisy: no test asserts a wall time, and hypothesis
# must not fail a correct property for being slow.
settings.register_profile("gradcheck", deadline=None, print_blob=True)
settings.load_profile("gradcheck")
os.environ.setdefault("NO_COLOR", "1")

# A shell that starts pytest in the background (and some CI runners) ignores SIGINT, and an ignored
# signal stays ignored in every process started from here: the Ctrl-C tests' commands could not be
# interrupted. With Python's own handler here, every child starts with SIGINT at its default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
