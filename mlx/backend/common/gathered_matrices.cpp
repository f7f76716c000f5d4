#include "mlx/backend/common/gathered_matrices.h"

#include <stdexcept>

#include "mlx/backend/common/dispatch.h"
#include "mlx/utils.h"

namespace mlx::core {

std::vector<int64_t> matrix_indices(const array& idx, int64_t count, const char* op) {
  std::vector<int64_t> out(idx.size());
  const int nd = idx.ndim();
  dispatch_int(idx.dtype(), op, [&]<typename T>() {
    const T* base = idx.data<T>();
    std::vector<int32_t> pos(nd, 0);
    int64_t offset = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t v = static_cast<int64_t>(base[offset]);
      if constexpr (std::is_unsigned_v<T>) {
        if (base[offset] > static_cast<T>(INT64_MAX)) {
          v = -1;
        }
      }
      if (v < 0 || v >= count) {
        throw std::out_of_range(msg("[", op, "] Index ", static_cast<int64_t>(base[offset]),
                                    " is out of range for ", count, " matrices."));
      }
      out[i] = v;
      for (int d = nd - 1; d >= 0; --d) {
        offset += idx.strides()[d];
        if (++pos[d] < idx.shape(d)) {
          break;
        }
        offset -= static_cast<int64_t>(idx.shape(d)) * idx.strides()[d];
        pos[d] = 0;
      }
    }
  });
  return out;
}

ProductGroups group_by_rhs(const std::vector<int64_t>& rhs, int64_t count) {
  ProductGroups g;
  std::vector<int64_t> first(count + 1, 0);
  for (int64_t r : rhs) {
    ++first[r + 1];
  }
  for (int64_t i = 0; i < count; ++i) {
    first[i + 1] += first[i];
  }
  g.order.resize(rhs.size());
  std::vector<int64_t> next(first.begin(), first.end() - 1);
  for (size_t i = 0; i < rhs.size(); ++i) {
    g.order[next[rhs[i]]++] = static_cast<int64_t>(i);
  }
  for (int64_t i = 0; i < count; ++i) {
    if (first[i + 1] > first[i]) {
      g.starts.push_back(first[i]);
    }
  }
  g.starts.push_back(static_cast<int64_t>(rhs.size()));
  return g;
}

}  // namespace mlx::core
