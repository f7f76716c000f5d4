// The NumPy .npy format (versions 1.0, 2.0 and 3.0): internals shared by .npy and .npz.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mlx/array.h"
#include "mlx/io/detail.h"
#include "mlx/io/zip.h"

namespace mlx::core::io::detail {

// An evaluated array laid out densely for writing, in C order, or in Fortran order when it
// already is (as NumPy does), which saves a copy of transposed arrays.
struct DenseArray {
  array a;
  bool fortran;
  std::string_view bytes() const { return {a.data<char>(), a.nbytes()}; }
};
DenseArray dense_for_save(array a);

// The magic, version, length and header dict of `d`, padded to a multiple of 64 bytes.
std::string npy_header(const DenseArray& d);

// Reads one .npy payload from `src` straight into the new array's buffer. With `exact` the
// payload must end with the array data (zip members); files may carry trailing bytes.
array read_npy(ByteSource& src, const Context& ctx, bool exact);

// Writes `arrays` as an .npz archive (`op` names the caller in errors).
void write_npz(Writer& out, const std::vector<std::pair<std::string, array>>& arrays, bool compress,
               const char* op, uint64_t zip64_limit = kZip64Limit);

}  // namespace mlx::core::io::detail
