#include "mlx/ops/fft.h"

#include <cmath>
#include <numeric>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/indexing.h"
#include "mlx/ops/shape.h"
#include "mlx/primitives/fft.h"
#include "mlx/utils.h"

namespace mlx::core::fft {

namespace {

// `a` with axis resized to `size`: truncated, or padded with zeros at the end.
array resize_axis(const array& a, int axis, int size, StreamOrDevice s) {
  int have = a.shape(axis);
  if (have == size) {
    return a;
  }
  if (have > size) {
    Shape start(a.ndim(), 0), stop = a.shape();
    stop[axis] = size;
    return slice(a, start, stop, s);
  }
  return pad(a, {axis}, {0}, {size - have}, array(0, a.dtype()), "constant", s);
}

array one_axis(const array& a, int axis, int n, bool inverse, bool real, StreamOrDevice s) {
  return fft_node(a, axis, n, inverse, real, to_stream(s));
}

// Every transform: checks, resizes each axis, applies one FFT per axis (the real axis last
// for c2r, first for r2c) and scales by `norm`.
array transform(const array& in, Shape n, std::vector<int> axes, bool inverse, bool real,
                const std::string& norm, const char* op, StreamOrDevice s) {
  if (norm != "backward" && norm != "ortho" && norm != "forward") {
    throw std::invalid_argument(
        msg("[", op, "] Invalid norm '", norm, "': expected 'backward', 'ortho' or 'forward'."));
  }
  if (axes.empty()) {
    throw std::invalid_argument(msg("[", op, "] Expected at least one axis."));
  }
  axes = normalize_axes(axes, static_cast<int>(in.ndim()), op);
  if (n.size() != axes.size()) {
    throw std::invalid_argument(
        msg("[", op, "] Got ", n.size(), " sizes for ", axes.size(), " axes; they must match."));
  }
  for (size_t i = 0; i < n.size(); ++i) {
    if (n[i] < 1) {
      throw std::invalid_argument(msg("[", op, "] Invalid number of FFT data points (", n[i],
                                      ") along axis ", axes[i], "; it must be at least 1."));
    }
  }
  if (real && !inverse && is_complex(in.dtype())) {
    throw std::invalid_argument(
        msg("[", op, "] Expected a real input, got an array of type ", in.dtype(), "."));
  }
  array a = astype(in, real && !inverse ? float32 : complex64, s);
  const int last = static_cast<int>(axes.size()) - 1;
  auto c2c = [&](array x, int i) {
    x = resize_axis(x, axes[i], n[i], s);
    return one_axis(x, axes[i], n[i], inverse, false, s);
  };
  if (real && !inverse) {
    a = one_axis(resize_axis(a, axes[last], n[last], s), axes[last], n[last], false, true, s);
    for (int i = 0; i < last; ++i) {
      a = c2c(a, i);
    }
  } else if (real) {
    for (int i = 0; i < last; ++i) {
      a = c2c(a, i);
    }
    a = one_axis(resize_axis(a, axes[last], n[last] / 2 + 1, s), axes[last], n[last], true, true,
                 s);
  } else {
    for (int i = 0; i <= last; ++i) {
      a = c2c(a, i);
    }
  }
  double total = 1;
  for (int v : n) {
    total *= v;
  }
  double scale = 1;
  if (norm == "ortho") {
    scale = 1 / std::sqrt(total);
  } else if ((norm == "backward") == inverse) {
    scale = 1 / total;
  }
  return scale == 1 ? a : multiply(a, array(static_cast<float>(scale), float32), s);
}

Shape input_sizes(const array& a, const std::vector<int>& axes, bool c2r, const char* op) {
  auto ax = normalize_axes(axes, static_cast<int>(a.ndim()), op);
  Shape n;
  for (int x : ax) {
    n.push_back(a.shape(x));
  }
  if (c2r && !n.empty()) {
    n.back() = 2 * (n.back() - 1);
  }
  return n;
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

}  // namespace

array fftn(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
           StreamOrDevice s) {
  return transform(a, n, axes, false, false, norm, "fftn", s);
}
array fftn(const array& a, const std::vector<int>& axes, const std::string& norm,
           StreamOrDevice s) {
  return fftn(a, input_sizes(a, axes, false, "fftn"), axes, norm, s);
}
array fftn(const array& a, const std::string& norm, StreamOrDevice s) {
  return fftn(a, all_axes(a), norm, s);
}
array ifftn(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return transform(a, n, axes, true, false, norm, "ifftn", s);
}
array ifftn(const array& a, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return ifftn(a, input_sizes(a, axes, false, "ifftn"), axes, norm, s);
}
array ifftn(const array& a, const std::string& norm, StreamOrDevice s) {
  return ifftn(a, all_axes(a), norm, s);
}

array fft(const array& a, int n, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, {n}, {axis}, false, false, norm, "fft", s);
}
array fft(const array& a, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, input_sizes(a, {axis}, false, "fft"), {axis}, false, false, norm, "fft", s);
}
array ifft(const array& a, int n, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, {n}, {axis}, true, false, norm, "ifft", s);
}
array ifft(const array& a, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, input_sizes(a, {axis}, false, "ifft"), {axis}, true, false, norm, "ifft", s);
}

array fft2(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
           StreamOrDevice s) {
  return transform(a, n, axes, false, false, norm, "fft2", s);
}
array fft2(const array& a, const std::vector<int>& axes, const std::string& norm,
           StreamOrDevice s) {
  return fft2(a, input_sizes(a, axes, false, "fft2"), axes, norm, s);
}
array ifft2(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return transform(a, n, axes, true, false, norm, "ifft2", s);
}
array ifft2(const array& a, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return ifft2(a, input_sizes(a, axes, false, "ifft2"), axes, norm, s);
}

array rfftn(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return transform(a, n, axes, false, true, norm, "rfftn", s);
}
array rfftn(const array& a, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return rfftn(a, input_sizes(a, axes, false, "rfftn"), axes, norm, s);
}
array rfftn(const array& a, const std::string& norm, StreamOrDevice s) {
  return rfftn(a, all_axes(a), norm, s);
}
array irfftn(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
             StreamOrDevice s) {
  return transform(a, n, axes, true, true, norm, "irfftn", s);
}
array irfftn(const array& a, const std::vector<int>& axes, const std::string& norm,
             StreamOrDevice s) {
  return irfftn(a, input_sizes(a, axes, true, "irfftn"), axes, norm, s);
}
array irfftn(const array& a, const std::string& norm, StreamOrDevice s) {
  return irfftn(a, all_axes(a), norm, s);
}

array rfft(const array& a, int n, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, {n}, {axis}, false, true, norm, "rfft", s);
}
array rfft(const array& a, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, input_sizes(a, {axis}, false, "rfft"), {axis}, false, true, norm, "rfft", s);
}
array irfft(const array& a, int n, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, {n}, {axis}, true, true, norm, "irfft", s);
}
array irfft(const array& a, int axis, const std::string& norm, StreamOrDevice s) {
  return transform(a, input_sizes(a, {axis}, true, "irfft"), {axis}, true, true, norm, "irfft", s);
}
array rfft2(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return transform(a, n, axes, false, true, norm, "rfft2", s);
}
array rfft2(const array& a, const std::vector<int>& axes, const std::string& norm,
            StreamOrDevice s) {
  return rfft2(a, input_sizes(a, axes, false, "rfft2"), axes, norm, s);
}
array irfft2(const array& a, const Shape& n, const std::vector<int>& axes, const std::string& norm,
             StreamOrDevice s) {
  return transform(a, n, axes, true, true, norm, "irfft2", s);
}
array irfft2(const array& a, const std::vector<int>& axes, const std::string& norm,
             StreamOrDevice s) {
  return irfft2(a, input_sizes(a, axes, true, "irfft2"), axes, norm, s);
}

array fftfreq(int n, double d, StreamOrDevice s) {
  if (n < 1) {
    throw std::invalid_argument(msg("[fftfreq] n must be positive, got ", n, "."));
  }
  int pos = (n - 1) / 2 + 1;
  array k = concatenate({arange(0, pos, s), arange(-(n / 2), 0, s)}, 0, s);
  return multiply(astype(k, float32, s), array(static_cast<float>(1.0 / (d * n)), float32), s);
}

array rfftfreq(int n, double d, StreamOrDevice s) {
  if (n < 1) {
    throw std::invalid_argument(msg("[rfftfreq] n must be positive, got ", n, "."));
  }
  return multiply(astype(arange(0, n / 2 + 1, s), float32, s),
                  array(static_cast<float>(1.0 / (d * n)), float32), s);
}

namespace {

array shift(const array& a, const std::optional<std::vector<int>>& axes, bool inverse,
            StreamOrDevice s) {
  std::vector<int> ax =
      axes ? normalize_axes(*axes, static_cast<int>(a.ndim()), inverse ? "ifftshift" : "fftshift")
           : all_axes(a);
  if (ax.empty()) {
    return a;
  }
  Shape shifts;
  for (int x : ax) {
    int len = a.shape(x);
    shifts.push_back(inverse ? -(len / 2) : len / 2);
  }
  return roll(a, shifts, ax, s);
}

}  // namespace

array fftshift(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
  return shift(a, axes, false, s);
}
array ifftshift(const array& a, const std::optional<std::vector<int>>& axes, StreamOrDevice s) {
  return shift(a, axes, true, s);
}

namespace {

// The window (default ones) centered and zero-padded to n_fft.
array padded_window(const std::optional<array>& window, int n_fft, int win_length, Dtype dt,
                    const char* op, StreamOrDevice s) {
  if (win_length < 1 || win_length > n_fft) {
    throw std::invalid_argument(
        msg("[", op, "] win_length (", win_length, ") must be between 1 and n_fft (", n_fft, ")."));
  }
  array w = window ? astype(*window, dt, s) : ones({win_length}, dt, s);
  if (w.ndim() != 1 || w.shape(0) != win_length) {
    throw std::invalid_argument(msg("[", op, "] Expected a 1-D window of length win_length (",
                                    win_length, "), got shape ", w.shape(), "."));
  }
  int left = (n_fft - win_length) / 2;
  return pad(w, {0}, {left}, {n_fft - win_length - left}, array(0, dt), "constant", s);
}

int checked_hop(std::optional<int> hop_length, int n_fft, const char* op) {
  int hop = hop_length ? *hop_length : std::max(n_fft / 4, 1);
  if (hop < 1) {
    throw std::invalid_argument(msg("[", op, "] hop_length must be positive, got ", hop, "."));
  }
  return hop;
}

}  // namespace

array stft(const array& x, int n_fft, std::optional<int> hop_length, std::optional<int> win_length,
           const std::optional<array>& window, bool center, const std::string& pad_mode,
           const std::string& norm, std::optional<bool> onesided, StreamOrDevice s) {
  if (x.ndim() < 1) {
    throw std::invalid_argument("[stft] Expected an input with at least one dimension.");
  }
  if (n_fft < 1) {
    throw std::invalid_argument(msg("[stft] n_fft must be positive, got ", n_fft, "."));
  }
  bool complex_in = is_complex(x.dtype());
  bool one = onesided.value_or(!complex_in);
  if (one && complex_in) {
    throw std::invalid_argument("[stft] onesided=True needs a real input.");
  }
  Dtype dt = complex_in ? complex64 : float32;
  int hop = checked_hop(hop_length, n_fft, "stft");
  array w = padded_window(window, n_fft, win_length.value_or(n_fft), float32, "stft", s);
  array a = astype(x, dt, s);
  int ax = static_cast<int>(a.ndim()) - 1;
  if (center) {
    int p = n_fft / 2, L = a.shape(ax);
    if (pad_mode == "reflect") {
      if (p >= L) {
        throw std::invalid_argument(msg("[stft] Reflect padding of ", p,
                                        " samples needs an input longer than that, got ", L,
                                        " samples."));
      }
      if (p > 0) {
        Shape start(a.ndim(), 0), stop = a.shape();
        start[ax] = 1;
        stop[ax] = p + 1;
        array lo = flip(slice(a, start, stop, s), {ax}, s);
        start[ax] = L - 1 - p;
        stop[ax] = L - 1;
        array hi = flip(slice(a, start, stop, s), {ax}, s);
        a = concatenate({lo, a, hi}, ax, s);
      }
    } else if (pad_mode == "constant" || pad_mode == "edge") {
      a = pad(a, {ax}, {p}, {p}, array(0, dt), pad_mode, s);
    } else {
      throw std::invalid_argument(msg("[stft] Invalid pad_mode '", pad_mode,
                                      "': expected 'reflect', 'constant' or 'edge'."));
    }
  }
  int L = a.shape(ax);
  if (L < n_fft) {
    throw std::invalid_argument(
        msg("[stft] The (padded) input has ", L, " samples, fewer than n_fft (", n_fft, ")."));
  }
  int frames = 1 + (L - n_fft) / hop;
  // Sample index t * hop + j of frame t, tap j.
  array idx = add(multiply(reshape(arange(0, frames, s), {frames, 1}, s), array(hop), s),
                  reshape(arange(0, n_fft, s), {1, n_fft}, s), s);
  array framed = multiply(take(a, idx, ax, s), w, s);  // (..., frames, n_fft)
  array spec = one ? rfft(framed, n_fft, -1, norm, s) : fft(framed, n_fft, -1, norm, s);
  return swapaxes(spec, -1, -2, s);
}

array istft(const array& stft_matrix, std::optional<int> n_fft, std::optional<int> hop_length,
            std::optional<int> win_length, const std::optional<array>& window, bool center,
            const std::string& norm, std::optional<bool> onesided, std::optional<int> length,
            StreamOrDevice s) {
  if (stft_matrix.ndim() < 2) {
    throw std::invalid_argument(
        msg("[istft] Expected an input of shape (..., n_freq, n_frames), "
            "got ",
            stft_matrix.shape(), "."));
  }
  bool one = onesided.value_or(true);
  int n_freq = stft_matrix.shape(-2), frames = stft_matrix.shape(-1);
  int n = n_fft.value_or(one ? 2 * (n_freq - 1) : n_freq);
  if (n < 1 || (one && n / 2 + 1 != n_freq) || (!one && n != n_freq)) {
    throw std::invalid_argument(msg("[istft] n_fft ", n, " does not match ", n_freq,
                                    " frequency bins (onesided=", one ? "True" : "False", ")."));
  }
  if (frames < 1) {
    throw std::invalid_argument("[istft] Expected at least one frame.");
  }
  int hop = checked_hop(hop_length, n, "istft");
  array w = padded_window(window, n, win_length.value_or(n), float32, "istft", s);
  array spec = swapaxes(astype(stft_matrix, complex64, s), -1, -2, s);  // (..., frames, n_freq)
  array f = one ? irfft(spec, n, -1, norm, s) : ifft(spec, n, -1, norm, s);
  f = multiply(f, w, s);  // (..., frames, n)
  // Overlap-add: frame t, tap j lands on sample t * hop + j. With r = ceil(n / hop) blocks of
  // hop taps per frame, block i of frame t lands on output block t + i.
  int r = (n + hop - 1) / hop;
  auto overlap_add = [&](array frames_x) {
    int ax = static_cast<int>(frames_x.ndim()) - 1;
    frames_x = pad(frames_x, {ax}, {0}, {r * hop - n}, array(0, frames_x.dtype()), "constant", s);
    Shape blocks = frames_x.shape();
    blocks.back() = r;
    blocks.push_back(hop);
    frames_x = reshape(frames_x, blocks, s);  // (..., frames, r, hop)
    std::optional<array> acc;
    for (int i = 0; i < r; ++i) {
      array part = take(frames_x, array(i), ax, s);  // (..., frames, hop)
      part = pad(part, {ax - 1}, {i}, {r - 1 - i}, array(0, part.dtype()), "constant", s);
      acc = acc ? add(*acc, part, s) : part;
    }
    Shape flat(acc->shape().begin(), acc->shape().end() - 2);
    flat.push_back(-1);
    return reshape(*acc, flat, s);  // (..., (frames + r - 1) * hop)
  };
  array y = overlap_add(f);
  array env = overlap_add(broadcast_to(square(w, s), {frames, n}, s));
  y = where(greater(env, array(1e-11f), s), divide(y, maximum(env, array(1e-11f), s), s),
            zeros_like(y, s), s);
  int total = y.shape(-1);
  int start = center ? n / 2 : 0;
  int want = length ? *length : (center ? total - 2 * (n / 2) : total);
  if (want < 0) {
    throw std::invalid_argument(msg("[istft] Invalid length ", want, "."));
  }
  int yax = static_cast<int>(y.ndim()) - 1;
  int stop = std::min(total, start + want);
  Shape lo(y.ndim(), 0), hi = y.shape();
  lo[yax] = std::min(start, total);
  hi[yax] = std::max(stop, lo[yax]);
  y = slice(y, lo, hi, s);
  if (y.shape(yax) < want) {
    y = pad(y, {yax}, {0}, {want - y.shape(yax)}, array(0, y.dtype()), "constant", s);
  }
  return y;
}

}  // namespace mlx::core::fft
