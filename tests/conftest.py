"""Shared test setup: a fixed thread count and seeds, and the repo root on sys.path."""

import os
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


def unescaped(markdown: str) -> str:
    """The characters a Markdown source renders after ui.literal's backslash escapes (what a learner reads)."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(markdown))


APP = os.path.join(ROOT, "dashboard.py")
# Every page's predict-first question; a test that looks at results opens the app as a shared, revealed link does.
QUESTIONS = ("serial", "serial.scaling", "serial.ckpt", "long_range", "depth", "attention_cost", "answers", "recall")
REVEALED = {f"predict.{q}": "show" for q in QUESTIONS}


def app_test(default_timeout: float = 60, revealed: bool = True):
    """The whole app (dashboard.py) under AppTest; `revealed`: every question answered 'just show me' by the URL."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=default_timeout)
    if revealed:
        for k, v in REVEALED.items():
            at.query_params[k] = v
    return at
