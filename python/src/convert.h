// Conversions between Python values (scalars, nested lists, NumPy / buffer / DLPack arrays)
// and arrays.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>

#include "mlx/array.h"

namespace mlx::core::python {

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

// The Dtype of a DLPack dtype; throws TypeError-style std::invalid_argument when unsupported.
Dtype dtype_from_dlpack(uint8_t code, uint8_t bits);

}  // namespace mlx::core::python
