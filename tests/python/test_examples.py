"""The examples of examples/demo.py, as tests (both interpreter modes)."""
import pytest

import demo


@pytest.mark.parametrize("mode", ["as_written", "f64"])
@pytest.mark.parametrize("ex", demo.EXAMPLES, ids=[e.name for e in demo.EXAMPLES])
def test_example(ex, mode):
    k = demo.specialize(ex)
    _, rel = demo.run_example(ex, k, mode)
    assert rel <= (ex.tol if mode == "as_written" else 1e-12)
