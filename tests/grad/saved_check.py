# RUN: check tests/grad/saved_lse.py:lse_rows --saved --sig 'x_ptr=*bf16,y_ptr=*fp32,n_cols=i32,stride=i32,BLOCK=16' --wrt x_ptr --out y_ptr --grid 3 --shape x_ptr=3x40 --shape y_ptr=3 --arg n_cols=37 --arg stride=40
# RUN: check tests/grad/saved_matmul.py:mm_relu --saved --sig 'a_ptr=*fp32,b_ptr=*fp32,c_ptr=*fp32,M=i32,N=i32,K=i32,stride_am=i32,stride_bk=i32,stride_cm=i32,BM=16,BN=16,BK=16' --wrt a_ptr,b_ptr --out c_ptr --grid 2,2 --shape a_ptr=20x40 --shape b_ptr=40x24 --shape c_ptr=20x24 --arg M=20 --arg N=24 --arg K=40 --arg stride_am=40 --arg stride_bk=24 --arg stride_cm=24
# `kad check --saved` of the kernels of saved_lse.py and saved_matmul.py: the backward of the
# saving forward against float64 finite differences of the forward, on kad's interpreter
# (docs/AD.md, "Saved loop results"). The saving forward runs first on the check's inputs and
# fills kad_saved; then the backward loads the online log-sum-exp's max and sum (which it splits
# into two loops: src/ad/ad_gauge.c), and the matmul's accumulator (in its GEMM form's dacc kernel).
# Shown to fail with the loads' offsets swapped (by hand) and with KAD_TEST_MUTATE=exp (the first).
