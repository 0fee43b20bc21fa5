# The 3x3 box filter (a CUDA C source): each of the 9 taps reading `in` stores its gradient into its
# own row of partials (site rows: neighbouring blocks' taps meet, each tap alone reads distinct
# elements) when the flag holds, and the sum kernel adds the 9 rows in a fixed order.
# RUN: grad tests/cuda/box3x3.cu:box3x3 --block 8,4 --wrt in --out out --emit cuda
