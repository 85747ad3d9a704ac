"""Runs made ahead of time, off any page: every reference experiment in a process of its own (reference), the smoke test
of the risky paths, and the training of the shipped models (checkpoints: the recall pair; text_checkpoints: real text).
"""
