"""Fault-injection benchmark: traced runs with planted faults and ground-truth labels."""
