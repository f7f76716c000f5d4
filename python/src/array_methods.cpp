// Array methods whose signature differs from the op they mirror. The others (a.sum(), a.exp(),
// a.split(), ...) are registered with their op by def_op.
#include "python/src/ops_common.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mlx::core::python {

namespace {

// Integers passed either as separate arguments or as one sequence: a.reshape(2, 3) or
// a.reshape((2, 3)).
std::vector<int> varargs_ints(const nb::args& args, const char* op) {
  nb::handle ints = args.size() == 1 && !nb::isinstance<nb::int_>(args[0]) ? args[0] : args;
  return cast_arg<std::vector<int>>(ints, op, "integers or one sequence of integers");
}

template <typename F>
void def_varargs_method(const char* name, const char* args_name, F f) {
  nb::cpp_function_def(f, nb::scope(nb::type<array>()), nb::name(name), nb::is_method(),
                       nb::arg(args_name), "stream"_a = nb::none());
}

}  // namespace

void init_array_methods(nb::module_&) {
  def_varargs_method("reshape", "shape", [](const array& a, nb::args shape, StreamOrDevice s) {
    return reshape(a, varargs_ints(shape, "reshape"), s);
  });
  def_varargs_method("transpose", "axes", [](const array& a, nb::args axes, StreamOrDevice s) {
    return axes.size() == 0 ? transpose(a, s) : transpose(a, varargs_ints(axes, "transpose"), s);
  });
}

}  // namespace mlx::core::python
