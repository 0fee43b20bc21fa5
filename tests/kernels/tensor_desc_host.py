"""Host-side tensor descriptor kernels written for kad's tests (issue 10): the launch passes
triton.tools.tensor_descriptor.TensorDescriptor objects; the kernel loads and stores tiles
through them, out-of-bounds lanes read as the padding and are not written."""
import triton
import triton.language as tl


@triton.jit
def host_desc_chunked(x_desc, w_desc, y_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # per row block: s = sum over column chunks of softplus(x * w) - log 2; y = x * sigmoid(s)[:, None]
    pm = tl.program_id(0)
    N = x_desc.shape[1]
    s = tl.zeros([BLOCK_M], dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        x = x_desc.load([pm * BLOCK_M, n0]).to(tl.float32)
        w = w_desc.load([n0]).to(tl.float32)
        z = x * w[None, :]
        s += tl.sum(tl.log(1.0 + tl.exp(z)) - 0.6931471805599453, axis=1)
    g = tl.sigmoid(s)
    for n0 in range(0, N, BLOCK_N):
        x = x_desc.load([pm * BLOCK_M, n0]).to(tl.float32)
        y_desc.store([pm * BLOCK_M, n0], x * g[:, None])


@triton.jit
def host_desc_swish_tile(x_desc, y_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # one tile per program through host-side descriptors: y = x * sigmoid(1.702 x); each element of x
    # is read once, so the backward stores its gradient through a descriptor of d_x (TMA)
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    x = x_desc.load([pm * BLOCK_M, pn * BLOCK_N])
    y_desc.store([pm * BLOCK_M, pn * BLOCK_N], x * tl.sigmoid(1.702 * x))
