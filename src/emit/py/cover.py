"""The zero-fill cover check of a backward's launcher (kad_py_covers; access_cover.c writes the calls).

The section (see launch.py) is printed at module level when a launcher checks a cover.
"""


# kad-embed: covers
_kad_covers_seen = {}  # (d's shape and strides, vs, clauses, negs) -> the answer


def _kad_covers(d, vs, clauses, negs):
    """True only when the launch writes every element of d's view (kad's access_cover.c):
    it writes sum(stride * v) for 0 <= v < extent (vs: {v: (stride, extent or None)}) where
    every clause sum(coef * v) < bound holds and every value of negs is < 0.  The answer is a
    function of Python ints only: remembered (a training loop asks the same question each step)."""
    key = (d.shape, d.stride(), tuple(vs.items()), tuple(clauses), tuple(negs))
    r = _kad_covers_seen.get(key)
    if r is None:
        if len(_kad_covers_seen) >= 4096:
            _kad_covers_seen.clear()
        r = _kad_covers_seen[key] = _kad_covers_now(d.shape, d.stride(), vs, clauses, negs)
    return r


def _kad_covers_now(shape, strides, vs, clauses, negs):
    if 0 in shape:
        return True
    if any(n >= 0 for n in negs):
        return False
    ext = {v: e for v, (_, e) in vs.items()}
    multi = {}
    for bound, ids, coefs in clauses:  # a clause on one variable bounds it
        if len(ids) == 1:
            if coefs[0] < 1:
                return False
            b = -(-bound // coefs[0])
            ext[ids[0]] = b if ext[ids[0]] is None else min(ext[ids[0]], b)
        else:
            multi.setdefault(tuple(sorted(ids)), []).append((bound, dict(zip(ids, coefs))))
    # a variable without an extent (a grid-stride loop's counter, whose loop runs while its clause
    # holds: access_cover.c proves it) is bounded by its group's clauses, as the group's largest stride
    grouped = {v for ids in multi for v in ids}
    if any(e is None and v not in grouped or e is not None and e <= 0 for v, e in ext.items()):
        return False
    runs, seen = [], set()
    for ids, cls in multi.items():  # a clause on several: their mixed-radix index, one dense run
        if seen & set(ids):
            return False
        seen |= set(ids)
        order = sorted(ids, key=lambda v: vs[v][0])
        s, n = vs[order[0]][0], 1
        if s < 1:
            return False
        for i, v in enumerate(order):
            if vs[v][0] != s * n or (ext[v] is None and i != len(order) - 1):
                return False
            n = None if ext[v] is None else n * ext[v]
        for bound, a in cls:
            a0 = a[order[0]]
            if a0 < 1 or any(a[v] * s != a0 * vs[v][0] for v in order):
                return False
            n = -(-bound // a0) if n is None else min(n, -(-bound // a0))
        if n <= 0:
            return False
        runs.append((s, n))
    runs += [(vs[v][0], ext[v]) for v in vs if v not in seen]
    merged = []  # runs of stride < 1 are taken at 0
    for s, n in sorted(r for r in runs if r[0] >= 1 and r[1] > 1):
        if merged and merged[-1][0] * merged[-1][1] == s:
            merged[-1] = (merged[-1][0], merged[-1][1] * n)
        else:
            merged.append((s, n))
    span, use = 0, [0] * len(merged)
    for st, n in sorted((st, n) for n, st in zip(shape, strides) if n != 1):
        if st <= span:  # a stride <= 0, or a view overlapping itself
            return False
        span += (n - 1) * st
        for k, (s, e) in enumerate(merged):
            if st % s == 0 and s <= st < s * e:
                use[k] += st // s * (n - 1)
                break
        else:
            return False
    return all(u < e for u, (_, e) in zip(use, merged))
# kad-end
