"""The consistency pass: every control at the edge of its range gives a result or one clear error, never an exception.

Config level: each field of every experiment at its lowest and highest allowed value either validates or raises
ValueError naming a field. Page level: every numeric control of every page's form at its minimum, then Run.
"""

import os

import pytest
from streamlit.testing.v1 import AppTest

from core.config import field_info, make_config
from core.experiments import EXPERIMENTS
from ui.common import PAGES

APP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard.py")


def _edge_values(info):
    if info.get("choices"):
        return [info["choices"][:1], info["choices"]] if info["sequence"] else [info["choices"][0], info["choices"][-1]]
    edges = [v for v in (info.get("lo"), info.get("hi")) if v is not None]
    return [(v,) for v in edges] if info["sequence"] else edges


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_field_at_its_edges_validates_or_names_a_field(name):
    exp = EXPERIMENTS[name]
    names = [i["name"] for i in field_info(exp.config_cls)]
    for info in field_info(exp.config_cls):
        for value in _edge_values(info):
            try:
                make_config(exp.config_cls, {info["name"]: value}, base=exp.config("quick"))
            except ValueError as err:
                assert str(err).split(":")[0] in names, f"{name}.{info['name']}={value!r}: {err}"


@pytest.mark.parametrize("page_key, path", PAGES)
def test_form_controls_at_their_minimum_run_or_explain(page_key, path):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(path).run()
    form = [w for w in at.number_input if str(w.key).startswith(f"w:{page_key}:")]
    assert form, "the page's form has numeric controls"
    for w in form:
        if w.min is not None:
            w.set_value(w.min)
    at.button(key=f"FormSubmitter:form:{page_key}-Run").click().run()
    assert not at.exception, at.exception
