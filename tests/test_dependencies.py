"""The dependency files agree: requirements.txt (pip, everywhere but the cloud), the Pipfile (what Streamlit
Community Cloud installs, with pipenv) and the README's install lines pin the same versions, and the cloud's torch is
the CPU build. Static checks of the files, no network; scripts/check_cloud_deps.sh installs the Pipfile for real.
"""

import os
import re
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # PyTorch's CPU wheel index (its "get started" page)
DEFAULT_INDEX = "https://pypi.org/simple"
# The dependency files Community Cloud recognises, in the order it looks for them (the first one found is used):
# "App dependencies for your Community Cloud app", docs.streamlit.io.
CLOUD_ORDER = ("uv.lock", "Pipfile", "environment.yml", "requirements.txt", "pyproject.toml")
# Options that would make pip ask another index, or read wheels from somewhere else, on every install.
INDEX_OPTIONS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host", "--no-index")


def _read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_lines(name: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in _read(name).splitlines() if line.split("#", 1)[0].strip()]


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in _requirement_lines(name):
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9A-Za-z.+!-]+)", line)
        if m:
            pins[_norm(m[1])] = m[2]
    return pins


@pytest.fixture(scope="module")
def pipfile() -> dict:
    with open(os.path.join(ROOT, "Pipfile"), "rb") as f:
        return tomllib.load(f)


def test_requirements_are_exact_pins_without_index_options():
    """requirements.txt is what pip installs here, in CI and on a learner's machine: exact pins only. No index
    option: an index this machine cannot reach costs pip five retries for every package (minutes), and an extra CPU
    index would hand a Linux GPU machine the CPU build (pip takes the highest version, and 2.13.0+cpu > 2.13.0)."""
    for line in _requirement_lines("requirements.txt"):
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9A-Za-z.!-]+", line), f"not an exact pin: {line!r}"
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in _requirement_lines(name):
            option = line.split()[0].split("=", 1)[0]
            assert option not in INDEX_OPTIONS, f"{name}: {line!r}"
    assert "+" not in _pins("requirements.txt")["torch"]  # no local label: any build of the version satisfies it


def test_dev_requirements_include_the_dashboards():
    assert "-r requirements.txt" in _requirement_lines("requirements-dev.txt")
    dev, app = _pins("requirements-dev.txt"), _pins("requirements.txt")
    assert not set(dev) & set(app), "a package pinned in both files: pin it once, in requirements.txt"


def test_community_cloud_reads_the_pipfile():
    """Of the files Community Cloud recognises, the first present is the Pipfile: a uv.lock would take its place."""
    present = [name for name in CLOUD_ORDER if os.path.exists(os.path.join(ROOT, name))]
    assert present[:1] == ["Pipfile"], present
    assert not os.path.exists(os.path.join(ROOT, "environment.yaml"))


def test_pipfile_pins_what_requirements_pin(pipfile):
    pins = _pins("requirements.txt")
    packages = {_norm(k): v for k, v in pipfile["packages"].items()}
    assert set(packages) == set(pins)
    for name, spec in packages.items():
        version = spec["version"] if isinstance(spec, dict) else spec
        assert version == f"=={pins[name]}", f"{name}: Pipfile {version}, requirements.txt =={pins[name]}"
    assert not pipfile.get("dev-packages")


def test_pipfile_takes_torch_from_the_cpu_index_only(pipfile):
    """pipenv resolves a package with `index = NAME` from that source alone, the others from the first source."""
    sources = {s["name"]: s for s in pipfile["source"]}
    assert pipfile["source"][0]["url"].rstrip("/") == DEFAULT_INDEX  # the default index, for everything else
    torch = pipfile["packages"]["torch"]
    assert isinstance(torch, dict) and set(torch) == {"version", "index"}
    cpu = sources[torch["index"]]
    assert cpu["url"].rstrip("/") == CPU_INDEX and cpu["verify_ssl"] is True
    restricted = [k for k, v in pipfile["packages"].items() if isinstance(v, dict) and "index" in v]
    assert restricted == ["torch"]  # numpy, pandas, …: from the default index, not the CPU index's copies
    assert all(s["verify_ssl"] is True and s["url"].startswith("https://") for s in pipfile["source"])


def test_the_readme_is_short_and_leads_with_the_two_commands():
    lines = _read("README.md").splitlines()
    assert len(lines) <= 120
    first_screen = "\n".join(lines[:30])
    assert "streamlit run dashboard.py" in first_screen and "bash scripts/test.sh" in first_screen
    for doc in re.findall(r"\((docs/[A-Z]+\.md)\)", "\n".join(lines)):
        assert _read(doc), doc


def test_readme_install_lines_use_the_pinned_versions():
    """Every `NAME==VERSION` in the install guide is a pin of requirements.txt (torch on a GPU machine included)."""
    pins = _pins("requirements.txt") | _pins("requirements-dev.txt")
    readme = _read("docs/INSTALL.md")
    mentioned = re.findall(r"\b([a-z][a-z0-9_-]*)==([0-9][0-9A-Za-z.+!-]*[0-9A-Za-z])", readme)
    assert any(name == "torch" for name, _ in mentioned)
    for name, version in mentioned:
        assert pins.get(_norm(name)) == version, f"README says {name}=={version}; pinned: {pins.get(_norm(name))}"


def test_readme_cites_the_deploy_documentation():
    readme = _read("docs/INSTALL.md")
    section = readme.split("## Share it on Streamlit Community Cloud", 1)[1].split("\n## ", 1)[0]
    for needle in (
        "docs.streamlit.io/deploy/streamlit-community-cloud/deploy-your-app/app-dependencies",
        "pipenv.pypa.io",
        "docs.astral.sh/uv",
        "pip.pypa.io",
        "pytorch.org/get-started",
        "scripts/check_cloud_deps.sh",
    ):
        assert needle in section, needle
