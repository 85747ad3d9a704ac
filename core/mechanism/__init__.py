"""What each page's instant view draws: the mechanism at one setting, computed at once from a formula or read from
the reference rows (never a run). A slider moves the setting; the page redraws within half a second.

`serial` — n dependent steps against one, timed from the rows; `long_range` — the gradient reaching token 0 from
token d, and trained recall at the farthest distance; `depth` — each layer's gradient at initialisation;
`attention_cost` — the bytes of the n × n scores, FlashAttention's and the KV cache against this device's memory;
`answers` — the dependent levels of a loop, a scan and a chunked form.
"""
