"""A package whose @triton.jit helpers kad can only find through the live
objects (tests/python/test_package_live.py): helpers defined inside
module-level if/else and try/except, re-exported through a chain of
modules, a module and a function of the same name, and a plugin file loaded
with importlib without an entry in sys.modules (plugins/loaded.py)."""
