from .softplus import softplus  # noqa: F401  (the package attribute shadows the submodule)
