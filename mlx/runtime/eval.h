#pragma once

#include <vector>

#include "mlx/array.h"

namespace mlx::core {

// Computes the outputs (and everything they need that is not computed yet) and waits.
void eval(std::vector<array> outputs);
// Submits the same work to the streams' workers and returns at once.
void async_eval(std::vector<array> outputs);

namespace detail {
// async_eval whose nodes drop their inputs as they run even while a transform traces them: for
// a transform that has copied what it reads of the graph already (vjp's overlapped forward).
void async_eval_untraced(std::vector<array> outputs);
}  // namespace detail

template <typename... Arrays,
          typename = std::enable_if_t<(std::is_same_v<std::decay_t<Arrays>, array> && ...)>>
void eval(Arrays&&... outputs) {
  eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

template <typename... Arrays,
          typename = std::enable_if_t<(std::is_same_v<std::decay_t<Arrays>, array> && ...)>>
void async_eval(Arrays&&... outputs) {
  async_eval(std::vector<array>{std::forward<Arrays>(outputs)...});
}

}  // namespace mlx::core
