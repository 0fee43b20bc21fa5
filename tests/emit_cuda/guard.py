# A backward with a launch guard (a store in a loop whose iterations write distinct elements only
# when step >= 64): the launcher refuses a launch that breaks it (cudaErrorInvalidValue, the
# reason in a comment) and computes the plain-store flag in C.
# RUN: grad tests/grad/guard_loop_stores.py:unknown_step_for --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,step=i32,BLOCK=64' --wrt x_ptr --out y_ptr --emit cuda
