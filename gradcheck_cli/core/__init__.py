"""The leaves every layer uses: a result as a record (``record``), the chapter's Rust number formats
(``formatting``), SplitMix64 (``splitmix``), the library's defaults (``defaults``), whose code raised
(``blame``) and how worker processes start (``processes``). Nothing here imports numpy at import time,
and nothing imports from above."""
