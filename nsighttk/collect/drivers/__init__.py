"""Child-process drivers: ``python -m nsighttk.collect.drivers.<name>_main`` runs user code (a workload,
a script, a compiler) in its own process, so nsighttk itself never imports it."""
