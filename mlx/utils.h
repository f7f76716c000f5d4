// Small helpers shared by ops: formatting for messages, axis normalization, broadcasting.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "mlx/array.h"

namespace mlx::core {

std::ostream& operator<<(std::ostream& os, const Shape& shape);
std::ostream& operator<<(std::ostream& os, const Strides& strides);
std::string to_string(const Shape& shape);

// Builds a message from streamable parts: msg("[op] bad axis ", axis, ".").
template <typename... Args>
std::string msg(Args&&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Maps a possibly negative axis into [0, ndim); throws std::invalid_argument naming `op`.
int normalize_axis(int axis, int ndim, const char* op);
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op,
                                bool allow_duplicates = false);

// NumPy broadcasting of two or more shapes; throws naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast_shapes");
Shape broadcast_shapes(const std::vector<Shape>& shapes, const char* op = "broadcast_shapes");

// The dtype that arrays of these dtypes combine to.
Dtype result_type(const std::vector<array>& arrays);

}  // namespace mlx::core
