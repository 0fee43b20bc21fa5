# A backward with a tape (a loop reversed backwards, STEP_TAPE): the launcher computes the tape's
# element count from the arguments and the grid (the trip count's TapeExpr printed as C through
# kad_tx_* helpers that refuse a division by zero or an overflow), allocates it on the stream,
# passes it after the flags and frees it after the launch.
# RUN: grad tests/cuda/recurrence.cu:recurrence --block 64 --wrt x,w --out h --emit cuda
