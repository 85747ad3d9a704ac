"""Page 5's token mixers, the field's answers to attention's price, one module each (as zoology's mixers/): its
layer, its facts and its registration (core.models.mixers.base). Imported in the order of the page's runs and charts.
The chapter's LSTM, GRU and Transformer, page 5's baselines too, are core.models.chapter's records.
"""

# isort: off
from core.models.mixers import gated  # noqa: F401  (min_gru, min_lstm)
from core.models.mixers import rwkv, ssm, linear, sliding_window, dilated_conv  # noqa: F401
