# A `while` loop's tape: a capacity (from the loop's bound, or --while-cap), a head whose first element is the
# overflow flag the kernel raises past the capacity, read back by the launcher (KAD_TAPE_OVERFLOW).
# RUN: grad tests/cuda/newton_while.cu:newton --block 32 --wrt x --out y --emit cuda
