# RUN: grad tests/kernels/spread_loops.py:row_softplus --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16384' --wrt x_ptr --out y_ptr
# RUN: check tests/kernels/spread_loops.py:row_softplus --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,stride=i32,BLOCK=16384' --wrt x_ptr --out y_ptr --grid 2 --shape x_ptr=2x40000 --shape y_ptr=2x40000 --arg n=38000 --arg stride=40000
# The module and `kad check` of spread_split.py's backward (row_softplus of
# tests/kernels/spread_loops.py, 16384-wide chunks split in two): the launcher deals the
# chunks times 2 to kad_spread programs per row; kad check runs it with kad_spread = 2 on kad's
# interpreter against float64 finite differences.
