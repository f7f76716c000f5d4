// A fused elementwise region (what compile's fusion pass builds): a straight-line program of
// elementwise ops over the primitive's inputs, evaluated by one kernel per backend. The IR
// contract (docs/ARCHITECTURE.md, "Fused regions") is what the backends generate code from.
#pragma once

#include <string>

#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/primitive.h"

namespace mlx::core {

// One op of a fused region. Values are numbered: 0 .. num_inputs - 1 are the primitive's
// inputs, num_inputs + i is the result of op i. An op broadcasts its operands (NumPy rules)
// to the region's shape, the shape of every output.
struct FusedOp {
  enum class Kind : uint8_t { unary, binary, select, cast };
  Kind kind;
  int code = 0;                // the UnaryOp / BinaryOp value (unary, binary)
  Dtype dtype;                 // the result's dtype
  int args[3] = {-1, -1, -1};  // operand values (unary, cast: 1; binary: 2; select: cond, x, y)

  int num_args() const { return kind == Kind::binary ? 2 : kind == Kind::select ? 3 : 1; }
  bool operator==(const FusedOp& o) const {
    return kind == o.kind && code == o.code && dtype == o.dtype && args[0] == o.args[0] &&
           args[1] == o.args[1] && args[2] == o.args[2];
  }
};

// A reduction attached to a region (its epilogue): the region's last output is
// Reduce(type, axes) of `value`, computed as the value is, never stored at the region's shape.
// `axes` are the trailing axes of the region's shape (a row reduction), sorted.
struct FusedReduction {
  int type = -1;  // a Reduce::ReduceType (Sum, Max or Min); -1: none
  int value = -1;
  std::vector<int> axes;
  bool operator==(const FusedReduction& o) const {
    return type == o.type && value == o.value && axes == o.axes;
  }
};

class Compiled : public Primitive {
 public:
  // `outputs` are op result values (each at most once), in the order of the primitive's outputs;
  // with a reduction, its result follows them.
  Compiled(Stream stream, std::vector<Dtype> input_dtypes, std::vector<FusedOp> ops,
           std::vector<int> outputs, FusedReduction reduction = {});
  MLX_DECLARE_EVAL
  const char* name() const override { return "Compiled"; }
  void print(std::ostream& os) override;
  bool is_equivalent(const Primitive& other) const override;
  // Every output has the shape all inputs broadcast to. Throws when an output of the unfused
  // ops would be smaller for these inputs (see uniform()).
  std::vector<Shape> output_shapes(const std::vector<array>& inputs) override;
  MLX_DECLARE_TRANSFORM_RULES

  // Whether, for these input shapes, each output of the unfused ops has the broadcast shape of
  // all inputs (then the fused kernel computes them all over that one shape).
  bool uniform(const std::vector<array>& inputs) const;
  // The region as a graph of ordinary elementwise primitives (the transforms use it, and a
  // shapeless replay whose shapes are not uniform).
  std::vector<array> expand(const std::vector<array>& inputs) const;
  // C-like listing of the ops, one line per op ("v3 = Exp(v0)"): the debug print, and the key
  // of the generated kernels (made once: the kernel caches look it up at every evaluation).
  const std::string& code() const { return code_; }

  const std::vector<Dtype>& input_dtypes() const { return input_dtypes_; }
  const std::vector<FusedOp>& ops() const { return ops_; }
  const std::vector<int>& output_values() const { return outputs_; }
  const FusedReduction& reduction() const { return reduction_; }
  bool has_reduction() const { return reduction_.type >= 0; }
  int num_inputs() const { return static_cast<int>(input_dtypes_.size()); }
  Dtype value_dtype(int v) const {
    return v < num_inputs() ? input_dtypes_[v] : ops_[v - num_inputs()].dtype;
  }

 private:
  std::vector<Dtype> input_dtypes_;
  std::vector<FusedOp> ops_;
  std::vector<int> outputs_;
  FusedReduction reduction_;
  std::string code_;

  std::string listing() const;
};

namespace detail {
// The CPU backend's generated kernels (backend/cpu/compiled_jit.h): counts for tests and
// benchmarks, and a wait for the ones being built.
struct FusedKernelStats {
  int64_t built = 0;        // compiled by this process
  int64_t from_disk = 0;    // loaded from the on-disk cache
  int64_t memory_hits = 0;  // evaluations that ran a loaded kernel
  int64_t interpreted = 0;  // evaluations that ran the interpreter
  int64_t failed = 0;       // compiler failures (those regions stay interpreted)
};
FusedKernelStats fused_kernel_stats();
void wait_for_fused_kernels();
// Generated kernels on (the default unless MLX_COMPILE_JIT=0) or off (the interpreter runs).
void set_fused_kernel_generation(bool enabled);
}  // namespace detail

}  // namespace mlx::core
