"""Multi-GPU communication: collectives against computation, and per-rank comparison."""
