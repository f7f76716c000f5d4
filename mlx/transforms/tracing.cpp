#include <atomic>

#include "mlx/transforms/transforms.h"

namespace mlx::core::detail {

namespace {
std::atomic<int> tracing_depth{0};
std::atomic<int> shapeless_depth{0};
}  // namespace

bool in_tracing() { return tracing_depth.load(std::memory_order_relaxed) > 0; }

TracingScope::TracingScope() { tracing_depth.fetch_add(1, std::memory_order_relaxed); }
TracingScope::~TracingScope() { tracing_depth.fetch_sub(1, std::memory_order_relaxed); }

ShapelessScope::ShapelessScope(bool active) : active_(active) {
  if (active_) {
    shapeless_depth.fetch_add(1, std::memory_order_relaxed);
  }
}
ShapelessScope::~ShapelessScope() {
  if (active_) {
    shapeless_depth.fetch_sub(1, std::memory_order_relaxed);
  }
}
bool in_shapeless_tracing() { return shapeless_depth.load(std::memory_order_relaxed) > 0; }

}  // namespace mlx::core::detail
