"""Clusters: Slurm batch jobs (:mod:`nsighttk.hpc.slurm`) and the task runner inside them."""
