"""Models: the layers (`core.models.layers`, torch) and the registry of models (`core.models.registry`), filled
here by importing each model's module, its layer class beside its facts (so torch too): page 5's mixers first (the
order of its runs and charts), then the chapter's models."""

# isort: off
from core.models import mixers  # noqa: F401
from core.models import chapter  # noqa: F401
