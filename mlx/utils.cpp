#include "mlx/utils.h"

#include <algorithm>
#include <stdexcept>

namespace mlx::core {

namespace {
template <typename V>
std::ostream& print_tuple(std::ostream& os, const V& v) {
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) {
    os << (i ? "," : "") << v[i];
  }
  return os << ")";
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return print_tuple(os, shape); }
std::ostream& operator<<(std::ostream& os, const Strides& s) { return print_tuple(os, s); }

std::string to_string(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

int normalize_axis(int axis, int ndim, const char* op) {
  if (axis < -ndim || axis >= ndim) {
    throw std::invalid_argument(
        msg("[", op, "] Axis ", axis, " is out of bounds for array with ", ndim, " dimensions."));
  }
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op,
                                bool allow_duplicates) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int a : axes) {
    int n = normalize_axis(a, ndim, op);
    if (!allow_duplicates && std::find(out.begin(), out.end(), n) != out.end()) {
      throw std::invalid_argument(msg("[", op, "] Received duplicate axis ", a, "."));
    }
    out.push_back(n);
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) {
    return a;
  }
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw std::invalid_argument(
          msg("[", op, "] Shapes ", a, " and ", b, " cannot be broadcast."));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes, const char* op) {
  if (shapes.empty()) {
    return {};
  }
  Shape out = shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) {
    out = broadcast_shapes(out, shapes[i], op);
  }
  return out;
}

Dtype result_type(const std::vector<array>& arrays) {
  if (arrays.empty()) {
    throw std::invalid_argument("[result_type] Needs at least one array.");
  }
  Dtype t = arrays[0].dtype();
  for (size_t i = 1; i < arrays.size(); ++i) {
    t = promote_types(t, arrays[i].dtype());
  }
  return t;
}

}  // namespace mlx::core
