#include "mlx/transforms/transforms.h"

namespace mlx::core::detail {

namespace {
// Per thread: a function is traced on the thread that transforms it, and another thread's ops
// (built or evaluated meanwhile) are not part of that trace.
thread_local int tracing_depth = 0;
thread_local int shapeless_depth = 0;
thread_local int unfused_depth = 0;
}  // namespace

bool in_tracing() { return tracing_depth > 0; }
bool in_nested_tracing() { return tracing_depth > 1; }

TracingScope::TracingScope() { ++tracing_depth; }
TracingScope::~TracingScope() { --tracing_depth; }

ShapelessScope::ShapelessScope(bool active) : active_(active) {
  if (active_) {
    ++shapeless_depth;
  }
}
ShapelessScope::~ShapelessScope() {
  if (active_) {
    --shapeless_depth;
  }
}
bool in_shapeless_tracing() { return shapeless_depth > 0; }

UnfusedScope::UnfusedScope() { ++unfused_depth; }
UnfusedScope::~UnfusedScope() { --unfused_depth; }
bool in_unfused_scope() { return unfused_depth > 0; }

}  // namespace mlx::core::detail
