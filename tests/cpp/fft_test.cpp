// FFT: values against a direct O(n^2) DFT in float64 for smooth, prime (generic radix and
// Bluestein) and composite lengths; rules against finite differences and loops.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "mlx/mlx.h"
#include "test_utils.h"
#include "transform_check.h"

namespace mlx::core::test {
namespace {

std::vector<std::complex<double>> dft(const std::vector<std::complex<double>>& x, bool inverse) {
  size_t n = x.size();
  std::vector<std::complex<double>> out(n);
  double sign = inverse ? 1 : -1;
  for (size_t k = 0; k < n; ++k) {
    std::complex<double> acc = 0;
    for (size_t j = 0; j < n; ++j) {
      double phase = sign * 2 * std::numbers::pi * static_cast<double>((j * k) % n) / n;
      acc += x[j] * std::complex<double>(std::cos(phase), std::sin(phase));
    }
    out[k] = acc;
  }
  return out;
}

TEST(FFT, AgainstDirectDFT) {
  for (int n : {1, 2, 3, 6, 8, 11, 13, 29, 37, 53, 60, 64, 127, 243, 250, 331, 1000}) {
    SCOPED_TRACE(n);
    auto re = random_values(n, -1, 1, n), im = random_values(n, -1, 1, n + 1);
    std::vector<std::complex<float>> xs(n);
    std::vector<std::complex<double>> xd(n);
    for (int i = 0; i < n; ++i) {
      xs[i] = {static_cast<float>(re[i]), static_cast<float>(im[i])};
      xd[i] = {xs[i].real(), xs[i].imag()};
    }
    array x(xs.data(), {n}, complex64);
    for (bool inverse : {false, true}) {
      auto expected = dft(xd, inverse);
      array out = inverse ? fft::ifft(x) : fft::fft(x);
      eval(out);
      const auto* p = out.data<std::complex<float>>();
      double err = 0, scale = 1;
      for (int k = 0; k < n; ++k) {
        auto e = inverse ? expected[k] / static_cast<double>(n) : expected[k];
        err = std::max(err, std::abs(std::complex<double>(p[k].real(), p[k].imag()) - e));
        scale = std::max(scale, std::abs(e));
      }
      EXPECT_LT(err, 2e-5 * scale * std::log2(n + 1.0)) << (inverse ? "ifft" : "fft");
    }
  }
}

TEST(FFTRules, GradRealTransforms) {
  // float32 inputs: the checker perturbs in the input dtype.
  auto f = [](const std::vector<array>& in) {
    array spectrum = fft::rfft(in[0], 0);
    return std::vector<array>{fft::irfft(multiply(spectrum, spectrum), 9, 0)};
  };
  GradCheckOptions opt;
  opt.rtol = 5e-2;
  check_grad(f, {random_array({9, 2}, float32, -1, 1, 3)}, opt);
}

TEST(FFTRules, Vmap) {
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{fft::rfftn(in[0], std::vector<int>{0, 1})};
  };
  check_vmap(f, {random_array({4, 3, 6}, float32, -1, 1, 5)}, {2});
}

}  // namespace
}  // namespace mlx::core::test
