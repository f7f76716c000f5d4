// mx.fast.cuda_kernel and mx.fast.precompiled_cuda_kernel (MLX's signatures): custom CUDA
// kernels from a source body (compiled by NVRTC at first call) or from a PTX / cubin image.
#include "mlx/fast_custom_kernel.h"

#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "mlx/utils.h"
#include "python/src/convert.h"

namespace nb = nanobind;
using namespace mlx::core;

namespace {

std::vector<array> arrays_of(const nb::sequence& inputs) {
  std::vector<array> out;
  for (nb::handle h : inputs) {
    out.push_back(python::to_operand(h));
  }
  return out;
}

std::vector<Shape> shapes_of(const std::vector<std::vector<int>>& shapes) {
  std::vector<Shape> out;
  for (const auto& s : shapes) {
    out.emplace_back(s.begin(), s.end());
  }
  return out;
}

// ("T", mx.float32), ("N", 4), ("flag", True): bool is checked before int (a Python bool is an
// int too).
std::vector<std::pair<std::string, fast::KernelTemplateArg>> template_args_of(nb::handle t) {
  std::vector<std::pair<std::string, fast::KernelTemplateArg>> out;
  if (t.is_none()) {
    return out;
  }
  for (nb::handle item : t) {
    auto pair = nb::cast<nb::tuple>(item);
    if (pair.size() != 2) {
      throw nb::type_error("[cuda_kernel] template entries are (name, value) pairs.");
    }
    std::string name = nb::cast<std::string>(pair[0]);
    nb::handle v = pair[1];
    if (nb::isinstance<Dtype>(v)) {
      out.emplace_back(name, nb::cast<Dtype>(v));
    } else if (nb::isinstance<nb::bool_>(v)) {
      out.emplace_back(name, nb::cast<bool>(v));
    } else if (nb::isinstance<nb::int_>(v)) {
      out.emplace_back(name, nb::cast<int>(v));
    } else {
      throw nb::type_error(
          msg("[cuda_kernel] Template argument '", name, "' must be a Dtype, an int or a bool.")
              .c_str());
    }
  }
  return out;
}

std::vector<fast::KernelScalar> scalars_of(const nb::sequence& scalars) {
  std::vector<fast::KernelScalar> out;
  for (nb::handle v : scalars) {
    if (nb::isinstance<nb::bool_>(v)) {
      out.emplace_back(nb::cast<bool>(v));
    } else if (nb::isinstance<nb::int_>(v)) {
      out.emplace_back(nb::cast<int64_t>(v));
    } else if (nb::isinstance<nb::float_>(v)) {
      out.emplace_back(nb::cast<double>(v));
    } else {
      throw nb::type_error("[precompiled_cuda_kernel] scalars must be bool, int or float.");
    }
  }
  return out;
}

}  // namespace

void init_custom_kernels(nb::module_& m) {
  nb::class_<fast::CudaKernel>(m, "CudaKernel",
                               "A custom CUDA kernel made by mx.fast.cuda_kernel; call it to run.")
      .def(
          "__call__",
          [](const fast::CudaKernel& k, const nb::sequence& inputs,
             const std::vector<std::vector<int>>& output_shapes,
             const std::vector<Dtype>& output_dtypes, std::array<int, 3> grid,
             std::array<int, 3> threadgroup, nb::handle template_args,
             std::optional<float> init_value, bool verbose, StreamOrDevice s) {
            return k(arrays_of(inputs), shapes_of(output_shapes), output_dtypes, grid, threadgroup,
                     template_args_of(template_args), init_value, verbose, s);
          },
          nb::kw_only(), nb::arg("inputs"), nb::arg("output_shapes"), nb::arg("output_dtypes"),
          nb::arg("grid"), nb::arg("threadgroup"), nb::arg("template") = nb::none(),
          nb::arg("init_value") = nb::none(), nb::arg("verbose") = false,
          nb::arg("stream") = nb::none(),
          "Runs the kernel: one output per output name, of the given shapes and dtypes.\n\n"
          "grid counts threads (as metal_kernel's), threadgroup the threads of a block; threads "
          "past grid return before the body. template is a list of (name, value) pairs: a Dtype "
          "becomes a type parameter, an int or bool a value parameter. init_value fills the "
          "outputs first (otherwise they start uninitialized). verbose prints the generated "
          "source. The kernel is compiled by NVRTC the first time a distinct source runs.")
      .def("__repr__",
           [](const fast::CudaKernel& k) { return "<cuda_kernel '" + k.name() + "'>"; });
  m.def(
      "cuda_kernel",
      [](const std::string& name, const std::vector<std::string>& input_names,
         const std::vector<std::string>& output_names, const std::string& source,
         const std::string& header, bool ensure_row_contiguous, int shared_memory) {
        return fast::CudaKernel(name, input_names, output_names, source, header,
                                ensure_row_contiguous, shared_memory);
      },
      nb::arg("name"), nb::arg("input_names"), nb::arg("output_names"), nb::arg("source"),
      nb::arg("header") = "", nb::arg("ensure_row_contiguous") = true, nb::arg("shared_memory") = 0,
      "cuda_kernel(name, input_names, output_names, source, header='', "
      "ensure_row_contiguous=True, shared_memory=0)\n\n"
      "A custom CUDA kernel from the body of a __global__ function; its signature is generated.\n"
      "An input named a of dtype T is `const T* a`; a_shape (int32), a_strides (int64, in "
      "elements) and a_ndim are passed too when the body names them (shape and strides index "
      "like arrays, up to 10 dimensions). An output named o is `T* o`. float16 and bfloat16 "
      "are float16_t (__half) and bfloat16_t (__nv_bfloat16); cooperative_groups is included.\n"
      "header comes before the kernel (helpers, includes). ensure_row_contiguous copies inputs "
      "to row-contiguous layouts first. shared_memory is the dynamic shared memory in bytes.\n\n"
      "Example::\n\n"
      "    kernel = mx.fast.cuda_kernel(\n"
      "        name='myexp', input_names=['inp'], output_names=['out'],\n"
      "        source='auto i = cooperative_groups::this_grid().thread_rank();\\n'\n"
      "               'out[i] = exp(inp[i]);')\n"
      "    y = kernel(inputs=[x], template=[('T', mx.float32)], grid=(x.size, 1, 1),\n"
      "               threadgroup=(256, 1, 1), output_shapes=[x.shape],\n"
      "               output_dtypes=[x.dtype])[0]\n\n"
      "Kernels run on GPU streams only and have no derivative; wrap a call in "
      "mx.custom_function to give it one.");
  m.def(
      "precompiled_cuda_kernel",
      [](const std::string& name, nb::bytes compiled_source, const nb::sequence& inputs,
         const std::vector<std::vector<int>>& output_shapes,
         const std::vector<Dtype>& output_dtypes, const nb::sequence& scalars,
         std::array<int, 3> grid, std::array<int, 3> threadgroup, int shared_memory,
         std::optional<float> init_value, bool ensure_row_contiguous, StreamOrDevice s) {
        std::string image(compiled_source.c_str(), compiled_source.size());
        return fast::precompiled_cuda_kernel(name, image, arrays_of(inputs),
                                             shapes_of(output_shapes), output_dtypes,
                                             scalars_of(scalars), grid, threadgroup, shared_memory,
                                             init_value, ensure_row_contiguous, s);
      },
      nb::kw_only(), nb::arg("name"), nb::arg("compiled_source"), nb::arg("inputs"),
      nb::arg("output_shapes"), nb::arg("output_dtypes"), nb::arg("scalars"), nb::arg("grid"),
      nb::arg("threadgroup"), nb::arg("shared_memory") = 0, nb::arg("init_value") = nb::none(),
      nb::arg("ensure_row_contiguous") = false, nb::arg("stream") = nb::none(),
      nb::sig("def precompiled_cuda_kernel(*, name: str, compiled_source: bytes, inputs: "
              "Sequence[array], output_shapes: Sequence[tuple[int, ...]], output_dtypes: "
              "Sequence[Dtype], scalars: Sequence[object], grid: tuple[int, int, int], "
              "threadgroup: tuple[int, int, int], shared_memory: int = 0, init_value: float | "
              "None = None, ensure_row_contiguous: bool = False, stream: Stream | Device | None = "
              "None) -> list[array]"),
      "Runs the kernel `name` (its symbol: extern \"C\" or mangled) of a PTX or cubin image.\n\n"
      "Its parameters must be the inputs' pointers, then the outputs' pointers, then the "
      "scalars (bool, int or float, passed in the width the kernel's parameter has). grid "
      "counts threads, threadgroup the threads of a block. init_value fills the outputs "
      "first. The image is loaded once per distinct image. GPU streams only.");
}
