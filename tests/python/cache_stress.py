"""Several processes generating and importing the same backward module at once, into one
$KAD_CACHE_DIR (used by test_package_cache.py and tests/gpu/distributed.py).

run(cache_root, workers, rounds, naive=False) starts `workers` spawned processes; in round r each
makes a fresh decorated RMSNorm (a new kad Program: no in-memory cache, as in a new process),
waits at a barrier, then generates, writes and imports the backward module in
cache_root/r<r>.  Meanwhile the parent polls every round's module file and counts what it reads:
nothing, a complete (sealed) module, or anything else (a partial or foreign file).  naive=True
replaces kad's writer with one that writes the final name directly, in two halves 50 ms apart
(what kad did not do): the poller must then see partial files, which shows it can.
"""
import multiprocessing as mp
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
for p in (os.path.join(REPO, "python"), HERE, os.path.join(REPO, "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

ROWS, COLS, BLOCK = 4, 40, 64


def make_kernel():
    """A freshly decorated RMSNorm of tests/kernels and what its backward module is keyed by."""
    import torch

    import kad
    from kernels import rms_norm
    dk = kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])(rms_norm.rms_norm_fwd_kernel)
    x, w = torch.randn(ROWS, COLS), torch.randn(COLS)
    y, rstd = torch.empty(ROWS, COLS), torch.empty(ROWS)
    launch = dk.bind((ROWS,), (x, w, y, rstd, COLS, COLS, COLS, 1e-6), {"BLOCK_SIZE": BLOCK}, after_launch=True)
    return dk, (launch.sig, ["x_ptr", "w_ptr"], ["y_ptr"], True)


def naive_write(path, data):
    """Writes the final name in place, slowly: the bug the poller must be able to see."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(data[:len(data) // 2])
        f.flush()
        time.sleep(0.05)
        f.write(data[len(data) // 2:])


def _worker(cache_root, rounds, barrier, queue, naive):
    errors, texts = [], set()
    try:
        import kad.autograd as ag
        if naive:
            ag.write_atomically = naive_write
        for r in range(rounds):
            os.environ["KAD_CACHE_DIR"] = os.path.join(cache_root, f"r{r}")
            dk, key = make_kernel()
            barrier.wait(timeout=120)
            try:
                mod = dk.program.module(*key)
                if not callable(getattr(mod, "launch_rms_norm_fwd_kernel_bwd", None)):
                    errors.append(f"round {r}: the imported module has no launch_rms_norm_fwd_kernel_bwd")
                texts.add(dk.program.module_text(*key))
            except Exception as e:  # noqa: BLE001 - reported to the parent
                errors.append(f"round {r}: {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001
        errors.append(f"worker: {type(e).__name__}: {e}")
    queue.put((os.getpid(), errors, sorted(texts)))


def module_name():
    """The backward module's file name (the same in every cache directory)."""
    dk, key = make_kernel()
    return os.path.basename(dk.program.module_path(*key))


def run(cache_root, workers=4, rounds=20, naive=False, timeout=300):
    """Returns a dict: errors (list), texts (the distinct module texts the workers got), seen
    (counts of what the poller read: 'complete', 'partial'), leftovers (files in the round
    directories other than the one module)."""
    import kad.autograd as ag
    name = module_name()
    paths = [os.path.join(cache_root, f"r{r}", name) for r in range(rounds)]
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(cache_root, rounds, barrier, queue, naive)) for _ in range(workers)]
    for p in procs:
        p.start()
    seen = {"complete": 0, "partial": 0}
    results, deadline = [], time.monotonic() + timeout

    def poll():
        for path in paths:
            try:
                with open(path, encoding="utf-8") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            seen["complete" if ag.unseal(data) is not None else "partial"] += 1

    while len(results) < workers and time.monotonic() < deadline:
        poll()
        while not queue.empty():
            results.append(queue.get())
        time.sleep(0.0005)
    for p in procs:
        p.join(timeout=max(1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
    poll()
    errors = [e for _, errs, _ in results for e in errs]
    if len(results) < workers:
        errors.append(f"only {len(results)} of {workers} workers reported")
    leftovers = []
    for r in range(rounds):
        d = os.path.join(cache_root, f"r{r}")
        leftovers += [os.path.join(d, f) for f in (os.listdir(d) if os.path.isdir(d) else []) if f != name]
    return {"errors": errors, "texts": sorted({t for _, _, ts in results for t in ts}), "seen": seen,
            "leftovers": leftovers, "paths": paths}


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        res = run(d, naive="--naive" in sys.argv)
        print({k: v for k, v in res.items() if k not in ("texts", "paths")}, len(res["texts"]), "distinct texts")
