"""Nsight Systems reports and expert rules: the nsys stats reports and nsys analyze rules as engine queries."""
