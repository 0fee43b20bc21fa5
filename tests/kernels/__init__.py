"""The kad kernel corpus: ordinary Triton modules, read by kad unchanged.

This file only makes the directory a package, so that kernels written in the
usual `from .kernel_utils import ...` style import under Triton as well.
"""
