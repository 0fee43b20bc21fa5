"""Tensor descriptor kernels written for kad's tests (issue 10): tiles loaded and stored through
tl.make_tensor_descriptor, out-of-bounds lanes read as the padding and not written."""
import triton
import triton.language as tl


@triton.jit
def desc_chunked(x_ptr, w_ptr, y_ptr, M, N, stride_x, stride_y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # per row block: s = sum over column chunks of tanh-like softplus(x * w); y = x * sigmoid(s)[:, None]
    pm = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride_x, 1], block_shape=[BLOCK_M, BLOCK_N])
    wd = tl.make_tensor_descriptor(w_ptr, [N], [1], [BLOCK_N])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[stride_y, 1], block_shape=[BLOCK_M, BLOCK_N])
    s = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        x = xd.load([pm * BLOCK_M, n0]).to(tl.float32)
        w = wd.load([n0]).to(tl.float32)
        z = x * w[None, :]
        s += tl.sum(tl.log(1.0 + tl.exp(z)) - 0.6931471805599453, axis=1)
    g = tl.sigmoid(s)
    for n0 in range(0, N, BLOCK_N):
        x = xd.load([pm * BLOCK_M, n0]).to(tl.float32)
        yd.store([pm * BLOCK_M, n0], x * g[:, None])


@triton.jit
def desc_swish_tile(x_ptr, y_ptr, M, N, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one tile per program: y = x * sigmoid(1.702 x); each element of x is read once, so the
    # backward stores its gradient through a descriptor of d_x (TMA) where the launch allows
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[stride, 1], block_shape=[BLOCK_M, BLOCK_N])
    yd = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[stride, 1], block_shape=[BLOCK_M, BLOCK_N])
    x = xd.load([pm * BLOCK_M, pn * BLOCK_N])
    yd.store([pm * BLOCK_M, pn * BLOCK_N], x * tl.sigmoid(1.702 * x))
