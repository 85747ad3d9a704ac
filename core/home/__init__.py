"""The home page's part of core: its records (what each section adds), the scoreboard's findings and Table 1, and the
precomputed summary (`python -m core.home.summary`) its cold start reads.
"""
