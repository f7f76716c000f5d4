#include "mlx/transforms/cotangent_sum.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "mlx/ops.h"
#include "mlx/primitives/creation.h"
#include "mlx/primitives/shape.h"

namespace mlx::core::detail {

namespace {

// Only nodes nobody has scheduled: an evaluation may be detaching any other's inputs.
bool unscheduled(const array& a, const std::type_info& primitive) {
  return a.status() == array::Status::unscheduled && a.has_primitive() &&
         typeid(a.primitive()) == primitive;
}

// zeros(): a Full node filled with a broadcast (and converted) `false`.
bool is_zeros(const array& a) {
  if (!unscheduled(a, typeid(Full))) {
    return false;
  }
  const array* fill = &a.inputs()[0];
  while (unscheduled(*fill, typeid(Broadcast)) || unscheduled(*fill, typeid(AsType))) {
    fill = &fill->inputs()[0];
  }
  return fill->is_available() && fill->size() == 1 && fill->dtype() == bool_ && !fill->item<bool>();
}

// The positions a slice_update writes: per dimension, `count` indices from `first` by `step`.
struct Region {
  Shape first, count, step;
};

std::optional<Region> written_region(const array& a) {
  if (!unscheduled(a, typeid(SliceUpdate))) {
    return std::nullopt;
  }
  const auto& update = static_cast<const SliceUpdate&>(a.primitive());
  return Region{update.start(), a.inputs()[1].shape(), update.strides()};
}

// Whether two regions share no position: in some dimension their index sets are apart (their
// ranges do not meet, or they step alike from starts that no step joins).
bool disjoint(const Region& a, const Region& b) {
  for (size_t d = 0; d < a.first.size(); ++d) {
    auto range = [&](const Region& r) {
      int64_t last = int64_t(r.first[d]) + int64_t(r.count[d] - 1) * r.step[d];
      return std::pair{std::min<int64_t>(r.first[d], last), std::max<int64_t>(r.first[d], last)};
    };
    auto [a_lo, a_hi] = range(a);
    auto [b_lo, b_hi] = range(b);
    const int64_t step = std::abs(a.step[d]);
    if (a_hi < b_lo || b_hi < a_lo ||
        (step > 1 && std::abs(b.step[d]) == step && (a.first[d] - b.first[d]) % step != 0)) {
      return true;
    }
  }
  return false;
}

// The regions outside which `a` is zero, where that is known: zeros, and slice updates of
// such (a chain of at most kMaxRegions: each new piece is checked against all before it).
constexpr size_t kMaxRegions = 1024;

std::optional<std::vector<Region>> nonzero_regions(const array& a) {
  std::vector<Region> regions;
  const array* node = &a;
  while (auto region = written_region(*node)) {
    if (regions.size() == kMaxRegions) {
      return std::nullopt;
    }
    regions.push_back(std::move(*region));
    node = &node->inputs()[0];
  }
  return is_zeros(*node) ? std::optional(std::move(regions)) : std::nullopt;
}

// `piece` (a slice update of zeros) written into `into` where `into` is known to be zero in
// the piece's region; else nothing.
std::optional<array> write_piece(const array& into, const array& piece) {
  auto region = written_region(piece);
  if (!region || !is_zeros(piece.inputs()[0]) || into.dtype() != piece.dtype() ||
      into.shape() != piece.shape()) {
    return std::nullopt;
  }
  auto regions = nonzero_regions(into);
  if (!regions || !std::all_of(regions->begin(), regions->end(),
                               [&](const Region& r) { return disjoint(r, *region); })) {
    return std::nullopt;
  }
  // The piece's own (normalized) bounds, which the public op would normalize again.
  const auto& update = static_cast<const SliceUpdate&>(piece.primitive());
  return array(into.shape(), into.dtype(),
               std::make_shared<SliceUpdate>(update.stream(), update.start(), update.stop(),
                                             update.strides()),
               {into, piece.inputs()[1]});
}

}  // namespace

array add_cotangents(const array& a, const array& b) {
  if (auto sum = write_piece(a, b)) {
    return *sum;
  }
  if (auto sum = write_piece(b, a)) {
    return *sum;
  }
  return add(a, b);
}

}  // namespace mlx::core::detail
