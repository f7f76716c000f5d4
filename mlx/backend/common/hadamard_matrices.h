// The Hadamard transform of length n = m 2^k (m in 1, 12, 20, 28) is H_m (x) H_{2^k}
// (Kronecker product, H_{2^k} the Sylvester matrix): rows of the input viewed as (m, 2^k) get
// a fast Walsh-Hadamard transform along the 2^k axis and a product with H_m along the m axis.
#pragma once

#include <cstdint>
#include <vector>

namespace mlx::core {

struct HadamardSize {
  int m;      // 1, 12, 20 or 28
  int64_t p;  // the power of two
};

// The decomposition of n, or m == 0 when n is not of the form m 2^k.
HadamardSize hadamard_size(int64_t n);

// H_m row-major as +1 / -1 (m = 12, 20, 28: the matrices MLX uses; m = 1: {1}).
const std::vector<int8_t>& hadamard_matrix(int m);

}  // namespace mlx::core
