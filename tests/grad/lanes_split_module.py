# RUN: grad tests/kernels/spread_loops.py:row_softplus_whole --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=2048' --wrt x_ptr --out y_ptr
# RUN: check tests/kernels/spread_loops.py:row_softplus_whole --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=2048' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x2100 --shape y_ptr=3x2100 --arg n=1900 --arg stride=2100
# The module and `kad check` of lanes_split.py's rewrite at 2048 lanes (two parts of 1024):
# the header says how the row runs; kad check runs the backward with kad_spread = 2 on kad's
# interpreter (each row's two parts on two programs) against float64 finite differences.
