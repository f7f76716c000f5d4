// Ops built only from other ops (no primitives of their own): discrete differences, median,
// non-zero counts, vector dot products, window functions and dtype queries, with MLX's
// signatures.
#pragma once

#include <string>
#include <vector>

#include "mlx/array.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

// The n-th discrete difference along `axis` (a[i+1] - a[i], n times; n = 0 returns a; bool
// inputs use logical xor like NumPy). The axis shrinks by n (to 0 when n exceeds it).
array diff(const array& a, int n = 1, int axis = -1, StreamOrDevice s = {});

// Median over all axes, a list of axes or one axis: the mean of the two middle sorted values
// for even counts. Floating-point result (float32 for integer and bool inputs); NaN propagates.
array median(const array& a, bool keepdims, StreamOrDevice s = {});
inline array median(const array& a, StreamOrDevice s = {}) { return median(a, false, s); }
array median(const array& a, const std::vector<int>& axes, bool keepdims = false,
             StreamOrDevice s = {});
array median(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// Number of non-zero elements (int32) over all axes, a list of axes or one axis.
array count_nonzero(const array& a, bool keepdims, StreamOrDevice s = {});
inline array count_nonzero(const array& a, StreamOrDevice s = {}) {
  return count_nonzero(a, false, s);
}
array count_nonzero(const array& a, const std::vector<int>& axes, bool keepdims = false,
                    StreamOrDevice s = {});
array count_nonzero(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// sum(conj(a) * b) along `axis` of the broadcast inputs.
array vecdot(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

// The input itself (numeric dtypes; bool throws like NumPy).
array positive(const array& a, StreamOrDevice s = {});

// Symmetric float32 windows of M points (NumPy's formulas): M <= 0 gives an empty array, M = 1
// gives [1].
array hanning(int M, StreamOrDevice s = {});
array hamming(int M, StreamOrDevice s = {});
array blackman(int M, StreamOrDevice s = {});
array bartlett(int M, StreamOrDevice s = {});

// The minimum and the maximum over all axes or a list of axes, as {min, max}.
std::vector<array> minmax(const array& a, bool keepdims = false, StreamOrDevice s = {});
std::vector<array> minmax(const array& a, const std::vector<int>& axes, bool keepdims = false,
                          StreamOrDevice s = {});
// The last two axes swapped (at least two dimensions).
array matrix_transpose(const array& a, StreamOrDevice s = {});
// Floating-point values as fp8 E4M3 bytes (uint8): round to nearest even, saturating at
// +-448 (E4M3 has no infinity), NaN as 0x7F.
array to_fp8(const array& x, StreamOrDevice s = {});
// fp8 E4M3 bytes (uint8) as `dtype` (a floating-point type); exact for every code.
array from_fp8(const array& x, Dtype dtype = bfloat16, StreamOrDevice s = {});
// True when promoting `from` with `to` gives `to`.
bool can_cast(Dtype from, Dtype to);
// True when `dtype` belongs to the kind: "bool", "signed integer", "unsigned integer",
// "integral", "real floating", "complex floating" or "numeric". Throws on an unknown kind.
bool isdtype(Dtype dtype, const std::string& kind);

}  // namespace mlx::core
