"""The tape helpers of a backward's launcher (kad_py_tape_interval, kad_py_tape_revolve).

The sections (see launch.py) are printed nested in the launcher's host function, at _kad_host's
indent; the revolve helpers follow its `import math`.
"""
import math


def _kad_host():
    """Not printed: a launcher's host function, which the sections below are nested in."""
    # kad-embed: tape_interval

    # interval arithmetic: a bound of the trip count over every program id
    def _kad_iv(x):
        return (x, x)

    def _kad_iv_corners(f, x, y):
        v = [f(a, b) for a in x for b in y]
        return (min(v), max(v))

    def _kad_iv_add(x, y):
        return (x[0] + y[0], x[1] + y[1])

    def _kad_iv_sub(x, y):
        return (x[0] - y[1], x[1] - y[0])

    def _kad_iv_mul(x, y):
        return _kad_iv_corners(lambda a, b: a * b, x, y)

    def _kad_iv_div(x, y):
        if y[0] <= 0 <= y[1]:
            raise ValueError("kad: a tape's trip count may divide by zero")
        return _kad_iv_corners(lambda a, b: (abs(a) // abs(b)) * (1 if (a < 0) == (b < 0) else -1), x, y)

    def _kad_iv_rem(x, y):
        m = max(abs(y[0]), abs(y[1]))
        if y[0] <= 0 <= y[1]:
            raise ValueError("kad: a tape's trip count may divide by zero")
        if 0 <= x[0] and x[1] < m:
            return x
        return (0 if x[0] >= 0 else 1 - m, 0 if x[1] <= 0 else m - 1)

    def _kad_iv_max(x, y):
        return (max(x[0], y[0]), max(x[1], y[1]))

    def _kad_iv_min(x, y):
        return (min(x[0], y[0]), min(x[1], y[1]))

    def _kad_iv_cdiv(x, y):
        return _kad_iv_corners(lambda a, b: -(-a // b), x, y)

    # kad-end
    # kad-embed: tape_revolve

    # revolve (binomial checkpointing): the plan the backward interprets, as kad's revolve_plan
    def _kad_revolve_beta(s, t):
        return math.comb(s + t, s)

    def _kad_revolve_plan(trips, s):
        # rows (restore slot or -1, at, advance, store slot or -1, reverse): actions in that order
        rows, row, st = [], [], [0, -1]  # st: the registers' iteration, the row's last phase
        if trips <= 0 or s < 1:
            return rows
        t = 0
        while _kad_revolve_beta(s, t) < trips:
            t += 1

        def act(phase, a, b):
            if st[1] >= phase:
                rows.append(tuple(row))
            if st[1] >= phase or not row:
                row[:] = [-1, 0, 0, -1, 0]
            st[1] = phase
            if phase == 0:
                row[0], row[1], st[0] = a, b, b
            elif phase == 1:
                row[2] = a
                st[0] += a
            elif phase == 2:
                row[3] = a
            else:
                row[4] = 1

        def at(p, c):
            if st[0] != p:
                act(0, c, p)

        act(2, 0, 0)
        stack = [(0, trips, s, t, 0)]
        while stack:
            p, l, s1, t1, c = stack.pop()
            if l <= 0:
                continue
            if l == 1:
                at(p, c)
                act(3, 0, 0)
            elif s1 == 1:
                for q in range(l - 1, -1, -1):
                    at(p, c)
                    if q:
                        act(1, q, 0)
                    act(3, 0, 0)
            else:
                m = l - min(_kad_revolve_beta(s1 - 1, t1), l - 1)
                at(p, c)
                act(1, m, 0)
                act(2, c + 1, 0)
                stack.append((p, m, s1, t1 - 1, c))
                stack.append((p + m, l - m, s1 - 1, t1, c + 1))
        rows.append(tuple(row))
        return rows

    def _kad_revolve_fit(trips, programs, slot_bytes, esz, budget):
        if trips <= 0 or programs <= 0:
            return (0, []) if esz <= budget else None
        per = programs * slot_bytes
        k = min(budget // per, trips)
        while k >= 1:
            plan = _kad_revolve_plan(trips, k)
            nbytes = (1 + 5 * len(plan)) * esz + k * per
            if nbytes <= budget:
                while k < trips:  # one more slot while it fits (the jump below may overshoot)
                    more = _kad_revolve_plan(trips, k + 1)
                    if (1 + 5 * len(more)) * esz + (k + 1) * per > budget:
                        break
                    k, plan = k + 1, more
                return k, plan
            k = 1 if k > 1 and k - -(-(nbytes - budget) // per) < 1 else k - max(1, -(-(nbytes - budget) // per))
        return None

    # kad-end
    return locals()
