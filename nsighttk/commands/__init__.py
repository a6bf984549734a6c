"""One module per command: an Options dataclass in, a Result out (with ``as_dict()`` for JSON),
no printing.  Each command is one walk down the pipeline; the CLI declares options and renders."""
