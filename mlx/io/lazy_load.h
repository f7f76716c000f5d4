// Lazy loading: arrays whose bytes are read from a file when they are evaluated.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "mlx/io/stream.h"
#include "mlx/primitives/primitive.h"

namespace mlx::core::io::detail {

// Fills outputs whose buffers are allocated (row-contiguous) from the reader.
using Decoder = std::function<void(Reader&, std::vector<array>&)>;

// Runs on a CPU stream (the bytes land in host memory; GPU consumers copy them on demand).
// Before reading it checks that a file has not changed since it was opened.
class Load : public Primitive {
 public:
  Load(Stream stream, std::shared_ptr<Reader> reader, Decoder decode)
      : Primitive(stream), reader_(std::move(reader)), decode_(std::move(decode)) {}
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  const char* name() const override { return "Load"; }

 private:
  std::shared_ptr<Reader> reader_;
  Decoder decode_;
};

// Arrays with these shapes and dtypes, read by `decode` when evaluated; with `eager` they are
// evaluated before returning (readers that cannot outlive the call).
std::vector<array> load_arrays(std::shared_ptr<Reader> reader, std::vector<Shape> shapes,
                               std::vector<Dtype> dtypes, Decoder decode, bool eager);

// Whether a reader can be read later (a file opened by path).
bool can_load_lazily(const std::shared_ptr<Reader>& reader);

}  // namespace mlx::core::io::detail
