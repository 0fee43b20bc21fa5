// RUN: ir tests/cuda/broken_neighbour.cu:with_asm --block 32
// The kernel asked for is one kad could not parse: its own errors.
