"""Training iterations: finding them, their time ranges, per-iteration work and interval arithmetic."""
