// mx.fft: NumPy's fft module with MLX's signatures.
#include "mlx/ops/fft.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <numeric>

#include "mlx/utils.h"
#include "python/src/bindings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;
using mlx::core::python::IntOrInts;

namespace {

using OptShape = std::optional<std::vector<int>>;
using OptAxes = std::optional<std::vector<int>>;

// NumPy's rules: with s and no axes, the last len(s) axes; with neither, every axis (or the
// given default); s defaults to the input sizes (irfft*: 2 (m - 1) on the last axis).
struct Resolved {
  std::vector<int> axes;
  std::optional<Shape> n;
};

Resolved resolve(const array& a, const OptShape& s, const OptAxes& axes,
                 const std::optional<std::vector<int>>& default_axes) {
  Resolved r;
  if (axes) {
    r.axes = *axes;
  } else if (s) {
    int k = static_cast<int>(s->size());
    for (int i = k; i > 0; --i) {
      r.axes.push_back(static_cast<int>(a.ndim()) - i);
    }
  } else if (default_axes) {
    r.axes = *default_axes;
  } else {
    r.axes.resize(a.ndim());
    std::iota(r.axes.begin(), r.axes.end(), 0);
  }
  if (s) {
    r.n = Shape(s->begin(), s->end());
  }
  return r;
}

using NFn = array (*)(const array&, const Shape&, const std::vector<int>&, const std::string&,
                      StreamOrDevice);
using AxesFn = array (*)(const array&, const std::vector<int>&, const std::string&, StreamOrDevice);

void def_nd(nb::module_& m, const char* name, NFn with_n, AxesFn without_n,
            std::optional<std::vector<int>> default_axes) {
  m.def(
      name,
      [with_n, without_n, default_axes](const array& a, const OptShape& s, const OptAxes& axes,
                                        const std::string& norm, StreamOrDevice st) {
        auto r = resolve(a, s, axes, default_axes);
        return r.n ? with_n(a, *r.n, r.axes, norm, st) : without_n(a, r.axes, norm, st);
      },
      "a"_a, "s"_a = nb::none(), "axes"_a = default_axes ? nb::cast(*default_axes) : nb::none(),
      "norm"_a = "backward", "stream"_a = nb::none());
}

using OneN = array (*)(const array&, int, int, const std::string&, StreamOrDevice);
using OneAxis = array (*)(const array&, int, const std::string&, StreamOrDevice);

void def_1d(nb::module_& m, const char* name, OneN with_n, OneAxis without_n) {
  m.def(
      name,
      [with_n, without_n](const array& a, std::optional<int> n, int axis, const std::string& norm,
                          StreamOrDevice s) {
        return n ? with_n(a, *n, axis, norm, s) : without_n(a, axis, norm, s);
      },
      "a"_a, "n"_a = nb::none(), "axis"_a = -1, "norm"_a = "backward", "stream"_a = nb::none());
}

std::optional<std::vector<int>> shift_axes(const std::optional<IntOrInts>& axes) {
  if (!axes) {
    return std::nullopt;
  }
  return mlx::core::python::to_ints(*axes);
}

}  // namespace

void init_fft(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("fft", "Discrete Fourier transforms.");
  def_1d(m, "fft", &fft::fft, &fft::fft);
  def_1d(m, "ifft", &fft::ifft, &fft::ifft);
  def_1d(m, "rfft", &fft::rfft, &fft::rfft);
  def_1d(m, "irfft", &fft::irfft, &fft::irfft);
  std::vector<int> last2{-2, -1};
  def_nd(m, "fft2", &fft::fftn, &fft::fftn, last2);
  def_nd(m, "ifft2", &fft::ifftn, &fft::ifftn, last2);
  def_nd(m, "rfft2", &fft::rfftn, &fft::rfftn, last2);
  def_nd(m, "irfft2", &fft::irfftn, &fft::irfftn, last2);
  def_nd(m, "fftn", &fft::fftn, &fft::fftn, std::nullopt);
  def_nd(m, "ifftn", &fft::ifftn, &fft::ifftn, std::nullopt);
  def_nd(m, "rfftn", &fft::rfftn, &fft::rfftn, std::nullopt);
  def_nd(m, "irfftn", &fft::irfftn, &fft::irfftn, std::nullopt);
  m.def(
      "fftfreq", [](int n, double d, StreamOrDevice s) { return fft::fftfreq(n, d, s); }, "n"_a,
      "d"_a = 1.0, "stream"_a = nb::none());
  m.def(
      "rfftfreq", [](int n, double d, StreamOrDevice s) { return fft::rfftfreq(n, d, s); }, "n"_a,
      "d"_a = 1.0, "stream"_a = nb::none());
  m.def(
      "fftshift",
      [](const array& a, const std::optional<IntOrInts>& axes, StreamOrDevice s) {
        return fft::fftshift(a, shift_axes(axes), s);
      },
      "a"_a, "axes"_a = nb::none(), "stream"_a = nb::none());
  m.def(
      "ifftshift",
      [](const array& a, const std::optional<IntOrInts>& axes, StreamOrDevice s) {
        return fft::ifftshift(a, shift_axes(axes), s);
      },
      "a"_a, "axes"_a = nb::none(), "stream"_a = nb::none());
  m.def(
      "stft",
      [](const array& x, int n_fft, std::optional<int> hop_length, std::optional<int> win_length,
         const std::optional<array>& window, bool center, const std::string& pad_mode,
         const std::string& norm, std::optional<bool> onesided, StreamOrDevice s) {
        return fft::stft(x, n_fft, hop_length, win_length, window, center, pad_mode, norm, onesided,
                         s);
      },
      "x"_a, "n_fft"_a = 2048, "hop_length"_a = nb::none(), "win_length"_a = nb::none(),
      "window"_a = nb::none(), "center"_a = true, "pad_mode"_a = "reflect", "norm"_a = "backward",
      "onesided"_a = nb::none(), "stream"_a = nb::none());
  m.def(
      "istft",
      [](const array& stft_matrix, std::optional<int> n_fft, std::optional<int> hop_length,
         std::optional<int> win_length, const std::optional<array>& window, bool center,
         const std::string& norm, std::optional<bool> onesided, std::optional<int> length,
         StreamOrDevice s) {
        return fft::istft(stft_matrix, n_fft, hop_length, win_length, window, center, norm,
                          onesided, length, s);
      },
      "stft_matrix"_a, "n_fft"_a = nb::none(), "hop_length"_a = nb::none(),
      "win_length"_a = nb::none(), "window"_a = nb::none(), "center"_a = true,
      "norm"_a = "backward", "onesided"_a = nb::none(), "length"_a = nb::none(),
      "stream"_a = nb::none());
}
