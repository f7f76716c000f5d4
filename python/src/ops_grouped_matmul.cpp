// Grouped and masked products (gather_mm, segmented_mm, block_masked_mm) and the Hadamard
// transform.
#include "mlx/ops/grouped_matmul.h"
#include "mlx/ops/hadamard.h"
#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;
using namespace mlx::core;
using mlx::core::python::docstring;

void init_grouped_matmul(nb::module_& m) {
  m.def(
      "gather_mm",
      [](const array& a, const array& b, const std::optional<array>& lhs_indices,
         const std::optional<array>& rhs_indices, bool sorted_indices,
         StreamOrDevice s) { return gather_mm(a, b, lhs_indices, rhs_indices, sorted_indices, s); },
      "a"_a, "b"_a, nb::arg("lhs_indices") = nb::none(), nb::arg("rhs_indices") = nb::none(),
      nb::kw_only(), "sorted_indices"_a = false, "stream"_a = nb::none(), docstring("gather_mm"));
  m.def(
      "segmented_mm",
      [](const array& a, const array& b, const array& segments, StreamOrDevice s) {
        return segmented_mm(a, b, segments, s);
      },
      "a"_a, "b"_a, "segments"_a, nb::kw_only(), "stream"_a = nb::none(),
      docstring("segmented_mm"));
  m.def(
      "block_masked_mm",
      [](const array& a, const array& b, int block_size, const std::optional<array>& mask_out,
         const std::optional<array>& mask_lhs, const std::optional<array>& mask_rhs,
         StreamOrDevice s) {
        return block_masked_mm(a, b, block_size, mask_out, mask_lhs, mask_rhs, s);
      },
      "a"_a, "b"_a, "block_size"_a = 64, "mask_out"_a = nb::none(), "mask_lhs"_a = nb::none(),
      "mask_rhs"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
      docstring("block_masked_mm"));
  m.def(
      "hadamard_transform",
      [](const mlx::core::python::ScalarOrArray& a, std::optional<float> scale, StreamOrDevice s) {
        return hadamard_transform(a.get(), scale, s);
      },
      "a"_a, "scale"_a = nb::none(), "stream"_a = nb::none(), docstring("hadamard_transform"));
}
