# kadpkg: a small package of Triton kernels spread over modules, written to
# test kad's import resolution (tests/sema/pkg_*.py, tests/python/test_package_imports.py).
