#include "mlx/io/lazy_load.h"

#include <stdexcept>

#include "mlx/runtime/eval.h"

namespace mlx::core::io::detail {

void Load::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  if (auto* f = dynamic_cast<FileReader*>(reader_.get()); f && !f->unchanged()) {
    throw std::runtime_error("[load] The file '" + f->label() +
                             "' changed after it was loaded; load it again.");
  }
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  decode_(*reader_, outputs);
}

void Load::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  eval_cpu(inputs, outputs);
}

std::vector<array> load_arrays(std::shared_ptr<Reader> reader, std::vector<Shape> shapes,
                               std::vector<Dtype> dtypes, Decoder decode, bool eager) {
  auto prim = std::make_shared<Load>(default_stream(Device(Device::cpu)), std::move(reader),
                                     std::move(decode));
  std::vector<array> out;
  if (shapes.size() == 1) {
    out.emplace_back(std::move(shapes[0]), dtypes[0], prim, std::vector<array>{});
  } else {
    out = array::make_arrays(std::move(shapes), dtypes, prim, {});
  }
  if (eager) {
    eval(out);
  }
  return out;
}

bool can_load_lazily(const std::shared_ptr<Reader>& reader) {
  return dynamic_cast<FileReader*>(reader.get()) != nullptr;
}

}  // namespace mlx::core::io::detail
