#include "mlx/primitives/elementwise.h"

namespace mlx::core {

#define MLX_NAME_ENTRY(NAME) #NAME,

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {MLX_UNARY_OPS(MLX_NAME_ENTRY)};
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {MLX_BINARY_OPS(MLX_NAME_ENTRY)};
  return names[static_cast<int>(op)];
}

#undef MLX_NAME_ENTRY

}  // namespace mlx::core
