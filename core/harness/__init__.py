"""The measuring harness: timing (bench), the device, the memory guard and the heap, Stop between repeats
(cancel), and the formulas measurements are read against (FLOPs, memory, the roofline, log-log fits).
"""
