"""What models learn from and the loop that teaches them: the synthetic tasks (tasks), real text read byte by byte
(text), and one training loop with one divergence policy (loop).
"""
