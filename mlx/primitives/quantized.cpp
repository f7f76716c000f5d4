#include "mlx/primitives/quantized.h"

#include "mlx/utils.h"

namespace mlx::core {

QuantMode quant_mode(const std::string& mode, const char* op) {
  if (mode == "affine") {
    return QuantMode::affine;
  }
  if (mode == "mxfp4") {
    return QuantMode::mxfp4;
  }
  if (mode == "mxfp8") {
    return QuantMode::mxfp8;
  }
  if (mode == "nvfp4") {
    return QuantMode::nvfp4;
  }
  throw std::invalid_argument(msg("[", op, "] Invalid quantization mode '", mode,
                                  "'; the modes are affine, mxfp4, mxfp8 and nvfp4."));
}

const char* quant_mode_name(QuantMode mode) {
  switch (mode) {
    case QuantMode::affine:
      return "affine";
    case QuantMode::mxfp4:
      return "mxfp4";
    case QuantMode::mxfp8:
      return "mxfp8";
    case QuantMode::nvfp4:
      return "nvfp4";
  }
  return "affine";
}

namespace {

int quantized_cols(const array& w, int bits) { return w.shape(-1) * 32 / bits; }

}  // namespace

std::vector<Shape> QuantizedMatmul::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  const array& w = inputs[1];
  shape.back() = transpose_ ? w.shape(-2) : quantized_cols(w, bits_);
  return {shape};
}

std::vector<Shape> GatherQMM::output_shapes(const std::vector<array>& inputs) {
  const array& x = inputs[0];
  const array& w = inputs[1];
  Shape shape = inputs[inputs.size() - 2].shape();
  shape.push_back(x.shape(-2));
  shape.push_back(transpose_ ? w.shape(-2) : quantized_cols(w, bits_));
  return {shape};
}

}  // namespace mlx::core
