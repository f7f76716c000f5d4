// Docstrings of the mlx.core functions, looked up by name where they are registered.
#pragma once

#include <string_view>

namespace mlx::core::python {

// The docstring of mlx.core.<name> (without the signature, which nanobind adds), or "".
const char* docstring(std::string_view name);

}  // namespace mlx::core::python
