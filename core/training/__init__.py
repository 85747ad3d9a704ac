"""What models learn from and the loop that teaches them: the synthetic tasks (tasks), real text read byte by byte
(text), one training loop with one divergence policy (loop), the training step every speed page times (step), and
chunked training on a recall task with its held-out accuracy (chunks).
"""
