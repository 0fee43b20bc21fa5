// kad.cuda's HIP-on-CUDA header (see hip_runtime.h)
#pragma once
#include "hip_runtime.h"
