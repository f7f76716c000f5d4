#include "mlx/primitives/fft.h"

#include <stdexcept>

#include "mlx/utils.h"

namespace mlx::core {

std::vector<Shape> FFT::output_shapes(const std::vector<array>& inputs) {
  Shape shape = inputs[0].shape();
  // The op layer baked the length into resizes and scaling: only other axes may change (as in
  // a shapeless compile over a batch).
  int expected = real_ && inverse_ ? n_ / 2 + 1 : n_;
  if (shape[axis_] != expected) {
    throw std::invalid_argument(
        msg("[FFT] The transform length is fixed when the graph is built: "
            "expected ",
            expected, " elements along axis ", axis_, ", got input of shape ", shape, "."));
  }
  if (real_) {
    shape[axis_] = inverse_ ? n_ : n_ / 2 + 1;
  }
  return {shape};
}

array fft_node(const array& x, int axis, int n, bool inverse, bool real, Stream stream) {
  auto p = std::make_shared<FFT>(stream, axis, n, inverse, real);
  Shape shape = p->output_shapes({x})[0];
  Dtype dt = real && inverse ? float32 : complex64;
  return array(std::move(shape), dt, std::move(p), {x});
}

}  // namespace mlx::core
