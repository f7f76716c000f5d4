// Compiled::eval_gpu: a fused region on the GPU, run op by op: its expand()ed primitives, each
// with its own GPU kernel, so the results are the unfused graph's. (The generated single-kernel
// form is the GPU half of transforms/fuse.cpp still to come; until then compile fuses GPU
// regions only under MLX_COMPILE_FUSE_GPU=1.)
#include "mlx/primitives/compiled.h"

#include "mlx/backend/cuda/run_graph.h"

namespace mlx::core {

void Compiled::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  cu::run_graph_into(expand(inputs), outputs);
}

}  // namespace mlx::core
