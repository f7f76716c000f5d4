#include "mlx/primitives/conv.h"

namespace mlx::core {

int64_t conv_out_size(const ConvParams& p, int i, int64_t in, int64_t k) {
  int64_t dilated_in = in == 0 ? 0 : (in - 1) * p.input_dilation[i] + 1;
  int64_t padded = dilated_in + p.padding_lo[i] + p.padding_hi[i];
  int64_t window = (k - 1) * p.kernel_dilation[i] + 1;
  if (padded < window) {
    return 0;
  }
  return (padded - window) / p.stride[i] + 1;
}

Shape conv_output_shape(const ConvParams& p, const Shape& in, const Shape& weight) {
  int nd = static_cast<int>(in.size()) - 2;
  Shape out{in[0]};
  for (int i = 0; i < nd; ++i) {
    out.push_back(static_cast<int32_t>(conv_out_size(p, i, in[i + 1], weight[i + 1])));
  }
  out.push_back(weight[0]);
  return out;
}

Shape conv_weight_grad_shape(const ConvParams& p, const Shape& kernel, const Shape& in,
                             const Shape& cotangent) {
  Shape out{cotangent.back()};
  out.insert(out.end(), kernel.begin(), kernel.end());
  out.push_back(in.back() / p.groups);
  return out;
}

}  // namespace mlx::core
