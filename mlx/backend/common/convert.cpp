#include "mlx/backend/common/convert.h"

namespace mlx::core {

void convert_elements(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype, size_t n) {
  dispatch_pair(src_dtype, dst_dtype, "astype", [&]<typename From, typename To>() {
    convert_row(static_cast<const From*>(src), 1, static_cast<To*>(dst), 1,
                static_cast<int64_t>(n));
  });
}

}  // namespace mlx::core
