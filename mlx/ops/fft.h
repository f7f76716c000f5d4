// mlx::core::fft: NumPy's fft module with MLX's signatures. Inputs are cast to complex64
// (real transforms take float32); `s` / `n` pad with zeros or truncate each axis first; `norm`
// is "backward" (inverse scaled by 1/n), "ortho" (both by 1/sqrt(n)) or "forward".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core::fft {

array fftn(const array& a, const Shape& n, const std::vector<int>& axes,
           const std::string& norm = "backward", StreamOrDevice s = {});
array fftn(const array& a, const std::vector<int>& axes, const std::string& norm = "backward",
           StreamOrDevice s = {});
array fftn(const array& a, const std::string& norm = "backward", StreamOrDevice s = {});
array ifftn(const array& a, const Shape& n, const std::vector<int>& axes,
            const std::string& norm = "backward", StreamOrDevice s = {});
array ifftn(const array& a, const std::vector<int>& axes, const std::string& norm = "backward",
            StreamOrDevice s = {});
array ifftn(const array& a, const std::string& norm = "backward", StreamOrDevice s = {});

array fft(const array& a, int n, int axis, const std::string& norm = "backward",
          StreamOrDevice s = {});
array fft(const array& a, int axis = -1, const std::string& norm = "backward",
          StreamOrDevice s = {});
array ifft(const array& a, int n, int axis, const std::string& norm = "backward",
           StreamOrDevice s = {});
array ifft(const array& a, int axis = -1, const std::string& norm = "backward",
           StreamOrDevice s = {});

array fft2(const array& a, const Shape& n, const std::vector<int>& axes,
           const std::string& norm = "backward", StreamOrDevice s = {});
array fft2(const array& a, const std::vector<int>& axes = {-2, -1},
           const std::string& norm = "backward", StreamOrDevice s = {});
array ifft2(const array& a, const Shape& n, const std::vector<int>& axes,
            const std::string& norm = "backward", StreamOrDevice s = {});
array ifft2(const array& a, const std::vector<int>& axes = {-2, -1},
            const std::string& norm = "backward", StreamOrDevice s = {});

// The overloads with sizes n take the axes explicitly (Shape and axes are both int vectors).
// Real input: the last transformed axis keeps n / 2 + 1 bins.
array rfftn(const array& a, const Shape& n, const std::vector<int>& axes,
            const std::string& norm = "backward", StreamOrDevice s = {});
array rfftn(const array& a, const std::vector<int>& axes, const std::string& norm = "backward",
            StreamOrDevice s = {});
array rfftn(const array& a, const std::string& norm = "backward", StreamOrDevice s = {});
// Real output: n defaults to 2 * (m - 1) along the last axis (m its input length).
array irfftn(const array& a, const Shape& n, const std::vector<int>& axes,
             const std::string& norm = "backward", StreamOrDevice s = {});
array irfftn(const array& a, const std::vector<int>& axes, const std::string& norm = "backward",
             StreamOrDevice s = {});
array irfftn(const array& a, const std::string& norm = "backward", StreamOrDevice s = {});

array rfft(const array& a, int n, int axis, const std::string& norm = "backward",
           StreamOrDevice s = {});
array rfft(const array& a, int axis = -1, const std::string& norm = "backward",
           StreamOrDevice s = {});
array irfft(const array& a, int n, int axis, const std::string& norm = "backward",
            StreamOrDevice s = {});
array irfft(const array& a, int axis = -1, const std::string& norm = "backward",
            StreamOrDevice s = {});
array rfft2(const array& a, const Shape& n, const std::vector<int>& axes,
            const std::string& norm = "backward", StreamOrDevice s = {});
array rfft2(const array& a, const std::vector<int>& axes = {-2, -1},
            const std::string& norm = "backward", StreamOrDevice s = {});
array irfft2(const array& a, const Shape& n, const std::vector<int>& axes,
             const std::string& norm = "backward", StreamOrDevice s = {});
array irfft2(const array& a, const std::vector<int>& axes = {-2, -1},
             const std::string& norm = "backward", StreamOrDevice s = {});

// Sample frequencies (float32): fftfreq [0, 1, ..., -(n/2), ..., -1] / (d n), rfftfreq
// [0, ..., n/2] / (d n).
array fftfreq(int n, double d = 1.0, StreamOrDevice s = {});
array rfftfreq(int n, double d = 1.0, StreamOrDevice s = {});

// Moves the zero frequency to the center (ifftshift undoes it); default every axis.
array fftshift(const array& a, const std::optional<std::vector<int>>& axes = std::nullopt,
               StreamOrDevice s = {});
array ifftshift(const array& a, const std::optional<std::vector<int>>& axes = std::nullopt,
                StreamOrDevice s = {});

// Short-time Fourier transform of the last axis: frames of n_fft samples every hop_length
// (default n_fft / 4), multiplied by `window` (win_length samples, default all ones, centered
// in n_fft), transformed; output (..., n_freq, n_frames). `center` pads n_fft / 2 samples on
// both sides with pad_mode "reflect", "constant" or "edge". onesided (default: for real
// inputs) keeps n_fft / 2 + 1 bins.
array stft(const array& x, int n_fft = 2048, std::optional<int> hop_length = std::nullopt,
           std::optional<int> win_length = std::nullopt,
           const std::optional<array>& window = std::nullopt, bool center = true,
           const std::string& pad_mode = "reflect", const std::string& norm = "backward",
           std::optional<bool> onesided = std::nullopt, StreamOrDevice s = {});

// Inverse of stft: overlap-adds the windowed inverse transform of each frame and divides by
// the overlap-added squared window. n_fft defaults to 2 (n_freq - 1) when onesided (the
// default), else n_freq; `length` trims or zero-pads the result.
array istft(const array& stft_matrix, std::optional<int> n_fft = std::nullopt,
            std::optional<int> hop_length = std::nullopt,
            std::optional<int> win_length = std::nullopt,
            const std::optional<array>& window = std::nullopt, bool center = true,
            const std::string& norm = "backward", std::optional<bool> onesided = std::nullopt,
            std::optional<int> length = std::nullopt, StreamOrDevice s = {});

}  // namespace mlx::core::fft
