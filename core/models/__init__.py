"""Models: the layers (`core.models.layers`, torch) and the registry of model kinds (`core.models.registry`, which
imports torch only when it builds a layer)."""
