"""Adversarial kernels for kad's reverse-mode AD (tests/python/test_grad_adversarial.py)."""
