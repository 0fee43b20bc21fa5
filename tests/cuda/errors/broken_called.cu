// RUN: ir tests/cuda/broken_neighbour.cu:calls_elvis --block 32
// A kernel that calls a __device__ function kad could not parse: the call is located, then the
// function's own errors.
