// Convolutions, channels last as in MLX: input (N, spatial..., C_in), weight
// (C_out, kernel..., C_in / groups), output (N, out spatial..., C_out). Transposed
// convolutions take the weight in the same layout (C_out, kernel..., C_in / groups).
#pragma once

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

struct ConvParams;

// The general convolution: stride, padding (low and high per dimension), kernel and input
// dilation, groups and flip (true convolution). Empty vectors mean 1 (stride, dilations) or
// 0 (padding); a single value applies to every spatial dimension; padding_hi defaults to
// padding_lo.
array conv_general(array input, array weight, std::vector<int> stride = {},
                   std::vector<int> padding_lo = {}, std::vector<int> padding_hi = {},
                   std::vector<int> kernel_dilation = {}, std::vector<int> input_dilation = {},
                   int groups = 1, bool flip = false, StreamOrDevice s = {});

array conv1d(const array& input, const array& weight, int stride = 1, int padding = 0,
             int dilation = 1, int groups = 1, StreamOrDevice s = {});
array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
             const std::pair<int, int>& padding = {0, 0},
             const std::pair<int, int>& dilation = {1, 1}, int groups = 1, StreamOrDevice s = {});
array conv3d(const array& input, const array& weight,
             const std::tuple<int, int, int>& stride = {1, 1, 1},
             const std::tuple<int, int, int>& padding = {0, 0, 0},
             const std::tuple<int, int, int>& dilation = {1, 1, 1}, int groups = 1,
             StreamOrDevice s = {});

// Transposed convolutions (the gradient of conv with respect to its input): output size
// (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
array conv_transpose1d(const array& input, const array& weight, int stride = 1, int padding = 0,
                       int dilation = 1, int output_padding = 0, int groups = 1,
                       StreamOrDevice s = {});
array conv_transpose2d(const array& input, const array& weight,
                       const std::pair<int, int>& stride = {1, 1},
                       const std::pair<int, int>& padding = {0, 0},
                       const std::pair<int, int>& dilation = {1, 1},
                       const std::pair<int, int>& output_padding = {0, 0}, int groups = 1,
                       StreamOrDevice s = {});
array conv_transpose3d(const array& input, const array& weight,
                       const std::tuple<int, int, int>& stride = {1, 1, 1},
                       const std::tuple<int, int, int>& padding = {0, 0, 0},
                       const std::tuple<int, int, int>& dilation = {1, 1, 1},
                       const std::tuple<int, int, int>& output_padding = {0, 0, 0}, int groups = 1,
                       StreamOrDevice s = {});

// NumPy's 1-D convolve: mode "full", "same" or "valid".
array convolve(const array& a, const array& v, const std::string& mode = "full",
               StreamOrDevice s = {});

namespace detail {
// A Convolution node with validated geometry (negative padding allowed): what the transform
// rules build.
array convolution(const array& input, const array& weight, const ConvParams& params,
                  StreamOrDevice s = {});
}  // namespace detail

}  // namespace mlx::core
