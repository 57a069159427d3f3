import os

from hypothesis import settings

# CI machines are shared and noisy: no test asserts a wall time, and hypothesis
# must not fail a correct property for being slow.
settings.register_profile("gradcheck", deadline=None, print_blob=True)
settings.load_profile("gradcheck")
os.environ.setdefault("NO_COLOR", "1")
