"""nsighttk: an Nsight-centric GPU profiling toolkit.

It builds CUDA samples, drives ``nsys``/``ncu``/``torch.profiler``, loads what they export into
pandas tables (:class:`nsighttk.profile.Profile`) and explains them.  The architecture is a
pipeline with one module per stage: see ``DESIGN`` in the README.
"""

__version__ = "0.1.0"
