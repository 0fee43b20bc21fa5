# A window over an extern __shared__ array longer than the block (tile=40, 32 threads): the array
# is a row every thread holds, its writes per-thread arrays [32, 40] summed across the threads,
# the stores' race check an assert per element, and the taps tile[t + k] a read of the thread's
# own copy at its index.
# RUN: emit tests/cuda/constructs.cu:window_sum --sig tile=40 --block 32 --emit cuda
