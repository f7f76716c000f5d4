// What every backend shares: the timeout setting, the elementwise reductions (the ring's and
// MPI's user-defined ops), and the ordering of a split.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <tuple>

#include "mlx/backend/common/dispatch.h"
#include "mlx/distributed/communicator.h"
#include "mlx/utils.h"

namespace mlx::core::distributed::detail {

double timeout_seconds() {
  const char* v = std::getenv("MLX_DISTRIBUTED_TIMEOUT");
  if (v == nullptr || *v == '\0') {
    return 300.0;
  }
  char* end = nullptr;
  double t = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(t > 0) || !std::isfinite(t)) {
    throw std::invalid_argument(
        msg("[distributed] MLX_DISTRIBUTED_TIMEOUT must be a positive "
            "number of seconds; got '",
            v, "'."));
  }
  return t;
}

namespace {

template <typename T>
bool is_nan(const T& v) {
  if constexpr (std::is_same_v<T, complex64_t>) {
    return std::isnan(v.real()) || std::isnan(v.imag());
  } else if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(static_cast<double>(v));
  }
}

// NaN wins, as in the max / min reductions.
template <typename T, bool kMax>
void extreme_into(T* dst, const T* src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (is_nan(dst[i])) {
      continue;
    }
    if ((kMax ? src[i] > dst[i] : src[i] < dst[i]) || is_nan(src[i])) {
      dst[i] = src[i];
    }
  }
}

}  // namespace

void reduce_into(void* dst_, const void* src_, size_t count, Dtype dtype, ReduceOp op) {
  dispatch_all(dtype, "distributed reduction", [&]<typename T>() {
    T* dst = static_cast<T*>(dst_);
    const T* src = static_cast<const T*>(src_);
    switch (op) {
      case ReduceOp::sum:
        if constexpr (std::is_same_v<T, bool>) {
          for (size_t i = 0; i < count; ++i)
            dst[i] = dst[i] || src[i];
        } else {
          for (size_t i = 0; i < count; ++i)
            dst[i] = static_cast<T>(dst[i] + src[i]);
        }
        break;
      case ReduceOp::max:
        extreme_into<T, true>(dst, src, count);
        break;
      case ReduceOp::min:
        extreme_into<T, false>(dst, src, count);
        break;
    }
  });
}

std::vector<int> split_members(const std::vector<int>& colors, const std::vector<int>& keys,
                               int rank, int* new_rank) {
  std::vector<std::tuple<int, int>> members;  // (key, rank)
  for (int r = 0; r < static_cast<int>(colors.size()); ++r) {
    if (colors[r] == colors[rank]) {
      members.emplace_back(keys[r] < 0 ? r : keys[r], r);
    }
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  for (auto& [key, r] : members) {
    if (r == rank) {
      *new_rank = static_cast<int>(ranks.size());
    }
    ranks.push_back(r);
  }
  return ranks;
}

}  // namespace mlx::core::distributed::detail
