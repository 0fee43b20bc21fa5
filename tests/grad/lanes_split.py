# RUN: grad tests/kernels/spread_loops.py:row_softplus_whole --ir --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=4096' --wrt x_ptr --out y_ptr
# ROUNDTRIP
# A loop-free backward that is lane by lane on one tile wider than KAD_LANE_TILE (1024) lanes
# (docs/AD.md, "Lanes in parts"): row_softplus_whole of tests/kernels/spread_loops.py, the whole
# 4096-lane row in one block.  Its scalar work (the row's pointers) stays first; the rest runs in
# kad's loop over `part`, each arange offset by part * 1024, on 1024-lane tiles; the loop shares
# nothing between iterations, so it is spread like any other (kad_spread programs per row when the
# launch is small).  lanes_split_module.py has its module and kad check.
