// Transform rules of FFT. Every transform is (real-)linear, so its jvp applies it to the
// tangent. Cotangents follow the project's bilinear convention (a cotangent c of z pairs with a
// tangent t as Re(c t)): the DFT matrix is symmetric, so a complex transform is its own
// transpose; rfft's transpose zero-pads the cotangent to n bins and keeps the real part of
// its DFT; irfft's weighs the DFT of the real cotangent by the Hermitian multiplicities
// (1 for the DC and Nyquist bins, 2 for the others), conjugated.
#include "mlx/ops.h"
#include "mlx/primitives/fft.h"
#include "mlx/transforms/rule_utils.h"

namespace mlx::core {

std::vector<array> FFT::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>&) {
  Dtype in_dt = real_ && !inverse_ ? float32 : complex64;
  return {fft_node(astype(tangents[0], in_dt, stream()), axis_, n_, inverse_, real_, stream())};
}

std::vector<array> FFT::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>&, const std::vector<array>&) {
  Stream s = stream();
  const array& g = cotangents[0];
  if (!real_) {
    return {fft_node(astype(g, complex64, s), axis_, n_, inverse_, false, s)};
  }
  if (!inverse_) {
    // rfft: real(DFT(zero-padded cotangent)).
    int have = g.shape(axis_);
    array padded =
        pad(astype(g, complex64, s), {axis_}, {0}, {n_ - have}, array(0, complex64), "constant", s);
    return {mlx::core::real(fft_node(padded, axis_, n_, false, false, s), s)};
  }
  // irfft: multiplicities * conj(rfft(cotangent)).
  int bins = n_ / 2 + 1;
  std::vector<float> weights(bins, 2.f);
  weights[0] = 1.f;
  if (n_ % 2 == 0) {
    weights.back() = 1.f;
  }
  Shape wshape(g.ndim(), 1);
  wshape[axis_] = bins;
  array w(weights.data(), wshape, float32);
  array spectrum = fft_node(astype(g, float32, s), axis_, n_, false, true, s);
  return {multiply(conjugate(spectrum, s), w, s)};
}

std::pair<std::vector<array>, std::vector<int>> FFT::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  array x = detail::batch_first(inputs[0], axes[0]);
  int axis = axes[0] >= 0 ? axis_ + 1 : axis_;
  return {{fft_node(x, axis, n_, inverse_, real_, stream())}, {axes[0] >= 0 ? 0 : -1}};
}

}  // namespace mlx::core
