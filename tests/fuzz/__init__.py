"""Helpers of tests/robustness/test_fuzz.py: mutators of the real fixtures and the checks every command must pass."""
