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
