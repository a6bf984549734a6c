"""The hostile corpus: hundreds of malformed, hostile or careless inputs run through
every command, each checked for what nsighttk promises (README, "What nsighttk promises"):
exit 0 or 2 (3 for a missing tool, 130 for an interrupt), no traceback, at most one error line,
no hang, inputs byte-identical, no file half-written under a final name, nothing changed outside
the case's scratch folder.

* :mod:`.files` makes the hostile files (each case gets a scratch folder of its own);
* :mod:`.cases` lists the cases (deterministic: the same list every run);
* :mod:`.runner` runs one case (in-process through :func:`nsighttk.cli.main`, or as a real
  process where a hang or a signal must be observed) and checks it.

Run it with pytest (``tests/robustness/test_hostile.py``) or as a script that prints a summary:
``python -m tests.hostile [-k SUBSTRING] [-v]``.
"""
