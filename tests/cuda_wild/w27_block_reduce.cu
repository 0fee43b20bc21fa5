__inline__ __device__ float warpReduceSum(float val) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    val += __shfl_down_sync(0xffffffff, val, offset);
  return val;
}
__inline__ __device__ float blockReduceSum(float val) {
  static __shared__ float shared[32];
  int lane = threadIdx.x % warpSize;
  int wid = threadIdx.x / warpSize;
  val = warpReduceSum(val);
  if (lane == 0) shared[wid] = val;
  __syncthreads();
  val = (threadIdx.x < blockDim.x / warpSize) ? shared[lane] : 0;
  if (wid == 0) val = warpReduceSum(val);
  return val;
}
// RMSNorm, one block per row
__global__ void rms_norm_kernel(float* __restrict__ out, const float* __restrict__ input, const float* __restrict__ weight,
                                const float epsilon, const int num_tokens, const int hidden_size)
{
  __shared__ float s_variance;
  float variance = 0.0f;
  for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x) {
    const float x = input[blockIdx.x * hidden_size + idx];
    variance += x * x;
  }
  variance = blockReduceSum(variance);
  if (threadIdx.x == 0) s_variance = rsqrtf(variance / hidden_size + epsilon);
  __syncthreads();
  for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x) {
    float x = input[blockIdx.x * hidden_size + idx];
    out[blockIdx.x * hidden_size + idx] = x * s_variance * weight[idx];
  }
}
