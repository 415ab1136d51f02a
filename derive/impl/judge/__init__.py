"""Comparing what the code returned with the exact reference, and filing every failure by class."""
