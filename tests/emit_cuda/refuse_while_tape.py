# A `while` loop's tape (a capacity and an overflow flag the launcher would read back) is refused.
# RUN: grad tests/cuda/newton_while.cu:newton --block 32 --wrt x --out y --emit cuda
