#include "mlx/primitives/indexing.h"

namespace mlx::core {

bool Gather::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Gather*>(&other);
  return o && o->axes_ == axes_ && o->slice_sizes_ == slice_sizes_;
}

std::vector<Shape> Gather::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs.size() > 1 ? inputs[1].shape() : Shape{};
  shape.insert(shape.end(), slice_sizes_.begin(), slice_sizes_.end());
  return {shape};
}

bool GatherAxis::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const GatherAxis*>(&other);
  return o && o->axis_ == axis_;
}

bool Scatter::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Scatter*>(&other);
  return o && o->reduce_ == reduce_ && o->axes_ == axes_;
}

bool ScatterAxis::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const ScatterAxis*>(&other);
  return o && o->reduce_ == reduce_ && o->axis_ == axis_;
}

const char* Scatter::op_name() const {
  switch (reduce_) {
    case ScatterReduce::None:
      return "scatter";
    case ScatterReduce::Sum:
      return "scatter_add";
    case ScatterReduce::Prod:
      return "scatter_prod";
    case ScatterReduce::Max:
      return "scatter_max";
    case ScatterReduce::Min:
      return "scatter_min";
  }
  return "scatter";
}

const char* SortAlongAxis::name() const {
  switch (kind_) {
    case SortKind::Sort:
      return "Sort";
    case SortKind::ArgSort:
      return "ArgSort";
    case SortKind::Partition:
      return "Partition";
    case SortKind::ArgPartition:
      return "ArgPartition";
  }
  return "Sort";
}

bool SortAlongAxis::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const SortAlongAxis*>(&other);
  return o && o->kind_ == kind_ && o->axis_ == axis_ && o->kth_ == kth_;
}

}  // namespace mlx::core
