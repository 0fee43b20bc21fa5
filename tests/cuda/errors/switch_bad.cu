// RUN: ir %s:k --block 32
// switch: a label that is not a constant, a case given twice, a label outside the switch's body,
// a switch on a float.
__global__ void k(const float* x, float* y, int n, int m)
{
    int i = threadIdx.x;
    switch (i % 3) {
    case 0:
        y[i] = x[i];
        break;
    case 0:
        y[i] = 2.0f * x[i];
        break;
    case m:
        break;
    }
    switch (i) {
    case 1: {
        case 2:
            y[i] = 0.0f;
    }
    }
    switch (x[i]) {
    default:
        break;
    }
}
