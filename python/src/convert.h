// Conversions between Python values (scalars, nested lists, NumPy / buffer / DLPack arrays)
// and arrays.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <optional>

#include "mlx/array.h"

namespace mlx::core::python {

// Whether `obj` is an mx.array (inline: every operator calls it).
inline bool is_array(nanobind::handle obj) { return nanobind::isinstance<array>(obj); }

// mx.array(obj, dtype): copies the data of lists and foreign arrays.
array array_from_python(nanobind::handle obj, std::optional<Dtype> dtype = std::nullopt);

// An operand of an op: arrays pass through; Python scalars are weakly typed, taking the dtype
// of `like` when their kind fits it (int with any number, float with floating dtypes).
array to_operand(nanobind::handle obj, std::optional<Dtype> like = std::nullopt);
// Both operands of a binary op, each typed against the other.
std::pair<array, array> to_operands(nanobind::handle a, nanobind::handle b);

// Python scalars for arrays.
nanobind::object item(array a);
nanobind::object tolist(array a);

// A NumPy array viewing `a`'s memory (kept alive by the NumPy array); bfloat16 converts to
// float32, which NumPy has.
nanobind::object to_numpy(array a);

// The Dtype of a DLPack dtype (and back); throws TypeError when unsupported.
Dtype dtype_from_dlpack(uint8_t code, uint8_t bits);
nanobind::dlpack::dtype dlpack_dtype(Dtype t);

// A new array holding a copy of a foreign host array (any layout), converted to `dtype`
// (default: the same type; complex128 becomes complex64).
array copy_foreign(const nanobind::ndarray<nanobind::ro>& nd,
                   std::optional<Dtype> dtype = std::nullopt);

// An array sharing the memory of a foreign host array (zero-copy; ops never write into it),
// which stays alive while any array views it. None when the memory cannot be shared: not on the
// host, misaligned, or of an element type arrays lack (complex128).
std::optional<array> wrap_foreign(const nanobind::ndarray<nanobind::ro>& nd);

// A DLPack / buffer view of an evaluated array's memory that keeps the array alive.
nanobind::ndarray<> host_view(const array& a);

// Evaluates with the GIL released (other Python threads run meanwhile). With `check_signals`,
// a Ctrl-C that arrived meanwhile then raises KeyboardInterrupt (evaluation itself cannot be
// cut short).
void eval_releasing_gil(std::vector<array> arrays, bool check_signals = true);

}  // namespace mlx::core::python
