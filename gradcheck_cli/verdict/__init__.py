"""The verdict: from estimates and their error bars to passed, failed or inconclusive.

``words`` (the verdicts, defined once, and a check's outcome in words), ``terms`` (an estimate, its
error bar, the thresholds), ``rules`` (the verdict rules), ``reasons`` (each verdict's reason in one
sentence), ``estimates`` (the estimate columns) and ``diagnosis`` (what kind of mistake a failure
shows). The rules themselves are docs/method.md ("Verdicts").
"""
