# RUN: grad tests/kernels/spread_loops.py:row_softplus --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16384' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# A spread backward (docs/AD.md, "Spreading a loop over programs") whose loop's tile is split:
# row_softplus of tests/kernels/spread_loops.py with 16384-wide chunks.  The backward's loop is
# lane by lane (dx = dy * sigmoid(x)), so each chunk becomes two of 8192 lanes and the loop runs
# over the chunks times 2, dealt to kad_spread programs per row: iteration q is chunk q // 2, lanes
# (q % 2) * 8192 onwards.  spread_split_module.py has its module and
# kad check (shown to fail with the lanes' offset halved, by hand).
