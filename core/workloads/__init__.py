"""What experiments run on the lab's models, shared by more than one of them or by an offline run: one point of the
attention-cost sweep (attention_point), a layer's gradient reach at initialisation (reach, which gradient_reach and
answers_reach both run), and the real-text models with the arithmetic that reads them byte by byte (text_lm).
"""
