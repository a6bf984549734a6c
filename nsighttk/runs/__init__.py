"""Run directories (their layout, manifest and finish: :mod:`nsighttk.runs.layout`) and the runs
database (:mod:`nsighttk.runs.db`)."""
