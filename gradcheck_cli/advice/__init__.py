"""Step advice without the analytic answer: which requested step to trust (``steps``), and which of the
advised steps to keep for a whole parameter (``choice``)."""
