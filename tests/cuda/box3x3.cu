// RUN: ir %s:box3x3 --block 8,4
// RUN: check %s:box3x3 --block 8,4 --wrt in --out out --grid 3,4 --shape in=13x21 --shape out=13x21 --arg H=13 --arg W=21
// A 3x3 box filter on a 2-D grid of 2-D blocks: out-of-image taps are skipped with `continue`
// (a lane mask), and the sum is divided by the number of taps taken. The constant loops unroll.
#define R 1

__global__ void box3x3(const float* in, float* out, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H)
        return;
    float sum = 0.0f;
    int count = 0;
    for (int dy = -R; dy <= R; ++dy) {
        for (int dx = -R; dx <= R; ++dx) {
            int xx = x + dx, yy = y + dy;
            if (xx < 0 || xx >= W || yy < 0 || yy >= H)
                continue;
            sum += in[yy * W + xx];
            count++;
        }
    }
    out[y * W + x] = sum / count;
}
