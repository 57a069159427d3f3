"""The Taylor-remainder test, a verdict on a whole gradient that needs no tolerance (``remainder``),
its direction and steps (``geometry``) and the localization of a failure (``localize``)."""
