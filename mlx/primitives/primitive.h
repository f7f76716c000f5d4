// The unit of everything: a primitive evaluates on each backend (eval_cpu, eval_gpu) and
// knows its derivatives and batching rule.
#pragma once

#include <ostream>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/primitives/serialize.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

class Primitive {
 public:
  explicit Primitive(Stream stream) : stream_(stream) {}
  virtual ~Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  const Stream& stream() const { return stream_; }

  // What a kernel writes: every output (a single-output primitive sees one array).
  using Outputs = std::vector<array>;
  // One per backend, declared with MLX_DECLARE_EVAL. Kernels live in backend/<name>/; a
  // backend without a kernel for a primitive lists it in its one missing-kernels file.
  virtual void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;

  // Transform rules; the defaults throw "[Name] ... not implemented".
  virtual std::vector<array> jvp(const std::vector<array>& primals,
                                 const std::vector<array>& tangents,
                                 const std::vector<int>& argnums);
  virtual std::vector<array> vjp(const std::vector<array>& primals,
                                 const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums,
                                 const std::vector<array>& outputs);
  virtual std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes);

  virtual const char* name() const = 0;
  virtual void print(std::ostream& os) { os << name(); }
  // Same computation given the same inputs (used to merge common subexpressions).
  virtual bool is_equivalent(const Primitive& other) const { return false; }
  // Whether running it does more than compute its outputs (it sends or receives data): compile
  // then replays it at every call, never folding it into a constant, even when nothing it reads
  // depends on the function's inputs.
  virtual bool has_side_effects() const { return false; }
  // Whether, with several outputs, its kernels may write an output into the buffer of an input
  // they no longer need (each output element computed from the input elements it overwrites).
  // Off by default: another output may still read that input, so eval keeps every input of a
  // multi-output step referenced while it runs, which makes none of them donatable.
  virtual bool donates_across_outputs() const { return false; }
  // Output shapes for given input shapes, for shapeless compilation.
  virtual std::vector<Shape> output_shapes(const std::vector<array>& inputs);
  // Export: the class name and the constructor's parameters (MLX_SERIALIZABLE, see
  // serialize.h). The default throws: the primitive cannot be exported.
  virtual void write_state(serial::StateWriter& w) const;

 private:
  Stream stream_;
};

// Declares a primitive's kernels, one per backend.
#define MLX_DECLARE_EVAL                                                      \
  void eval_cpu(const std::vector<array>& inputs, Outputs& outputs) override; \
  void eval_gpu(const std::vector<array>& inputs, Outputs& outputs) override;

// Declares a primitive's jvp, vjp and vmap overrides (defined in <family>_rules.cpp).
#define MLX_DECLARE_TRANSFORM_RULES                                                               \
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,   \
                         const std::vector<int>& argnums) override;                               \
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents, \
                         const std::vector<int>& argnums, const std::vector<array>& outputs)      \
      override;                                                                                   \
  std::pair<std::vector<array>, std::vector<int>> vmap(const std::vector<array>& inputs,          \
                                                       const std::vector<int>& axes) override;

// A primitive with one output: its kernels take that output directly.
class UnaryPrimitive : public Primitive {
 public:
  using Primitive::Primitive;
  using Outputs = array;
  virtual void eval_cpu(const std::vector<array>& inputs, array& out) = 0;
  virtual void eval_gpu(const std::vector<array>& inputs, array& out) = 0;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) final {
    eval_cpu(inputs, outputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) final {
    eval_gpu(inputs, outputs[0]);
  }
};

}  // namespace mlx::core
