// mx.export_function, mx.import_function, mx.exporter / FunctionExporter and mx.export_to_dot.
// Inputs are given as MLX takes them: positional and keyword arrays, or one tuple / list of
// arrays and / or one dict of arrays.
#include "mlx/export/export.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <fstream>
#include <sstream>

#include "mlx/primitives/primitive.h"
#include "python/src/bindings.h"
#include "python/src/docstrings.h"
#include "python/src/trees.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

std::string path_of(nb::handle file, const char* op) {
  if (nb::isinstance<nb::str>(file)) {
    return nb::cast<std::string>(file);
  }
  if (nb::hasattr(file, "__fspath__")) {
    return nb::cast<std::string>(nb::module_::import_("os").attr("fsdecode")(file));
  }
  throw nb::type_error((std::string("[") + op + "] Expected a file path.").c_str());
}

array expect_array(nb::handle h, const std::string& prefix) {
  if (!nb::isinstance<array>(h)) {
    throw std::invalid_argument(prefix +
                                " Inputs can be positional and keyword arrays, or one tuple "
                                "or list of arrays and / or one dict of arrays; got " +
                                std::string(nb::type_name(h.type()).c_str()) + ".");
  }
  return nb::cast<array>(h);
}

void dict_into(nb::handle d, Kwargs& kwargs, const std::string& prefix) {
  for (auto [k, v] : nb::cast<nb::dict>(d)) {
    if (!nb::isinstance<nb::str>(k)) {
      throw std::invalid_argument(prefix + " Keyword input names must be strings.");
    }
    kwargs.insert_or_assign(nb::cast<std::string>(k), expect_array(v, prefix));
  }
}

std::pair<Args, Kwargs> extract_inputs(nb::args args, nb::kwargs kwargs,
                                       const std::string& prefix) {
  Args a;
  Kwargs k;
  size_t n = args.size();
  auto is_seq = [](nb::handle h) {
    return nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h);
  };
  if (n >= 1 && n <= 2 && !nb::isinstance<array>(args[0]) &&
      (is_seq(args[0]) || nb::isinstance<nb::dict>(args[0]))) {
    // One tuple / list of arrays and / or one dict of arrays.
    size_t i = 0;
    if (is_seq(args[0])) {
      for (nb::handle h : args[0]) {
        a.push_back(expect_array(h, prefix));
      }
      i = 1;
    }
    if (i < n) {
      if (!nb::isinstance<nb::dict>(args[i])) {
        expect_array(nb::none(), prefix);
      }
      dict_into(args[i], k, prefix);
      ++i;
    }
    if (i != n) {
      expect_array(args[i], prefix);
    }
  } else {
    for (nb::handle h : args) {
      a.push_back(expect_array(h, prefix));
    }
  }
  dict_into(kwargs, k, prefix);
  return {std::move(a), std::move(k)};
}

ExportFn wrap(nb::callable fun) {
  return [fun](const Args& args, const Kwargs& kwargs) {
    nb::gil_scoped_acquire gil;
    nb::list pos;
    for (auto& a : args) {
      pos.append(nb::cast(a));
    }
    nb::dict kw;
    for (auto& [name, a] : kwargs) {
      kw[nb::str(name.data(), name.size())] = nb::cast(a);
    }
    nb::object out = fun(*nb::tuple(pos), **kw);
    return tree_flatten(out, true, "export_function");
  };
}

nb::dict graph_dict(const ExportedGraph& g, bool shapeless) {
  auto shape_list = [](const Shape& s) {
    nb::list l;
    for (int d : s) {
      l.append(d);
    }
    return nb::tuple(l);
  };
  nb::dict d;
  nb::list inputs;
  for (int i : g.inputs) {
    inputs.append(i);
  }
  d["inputs"] = inputs;
  nb::list names;
  for (auto& n : g.keyword_names) {
    names.append(nb::str(n.data(), n.size()));
  }
  d["keyword_names"] = names;
  nb::list constants;
  for (auto& [id, c] : g.constants) {
    constants.append(nb::make_tuple(id, nb::cast(c)));
  }
  d["constants"] = constants;
  nb::list nodes;
  for (auto& n : g.nodes) {
    nb::dict nd;
    nd["primitive"] = nb::str(n.primitive.data(), n.primitive.size());
    nd["state"] = nb::bytes(n.state.data(), n.state.size());
    nb::list ins, outs, shapes, dtypes;
    for (int i : n.inputs) {
      ins.append(i);
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      outs.append(n.outputs[k]);
      shapes.append(shape_list(n.output_shapes[k]));
      dtypes.append(nb::cast(n.output_dtypes[k]));
    }
    nd["inputs"] = ins;
    nd["outputs"] = outs;
    nd["shapes"] = shapes;
    nd["dtypes"] = dtypes;
    nodes.append(nd);
  }
  d["primitives"] = nodes;
  nb::list outputs;
  for (int o : g.outputs) {
    outputs.append(o);
  }
  d["outputs"] = outputs;
  d["shapeless"] = shapeless;
  return d;
}

void export_any(nb::object file, nb::callable fun, nb::args args, bool shapeless,
                std::optional<std::string> metadata, nb::kwargs kwargs, bool optimize_memory) {
  auto [a, k] = extract_inputs(args, kwargs, "[export_function]");
  if (!nb::isinstance<nb::str>(file) && !nb::hasattr(file, "__fspath__") &&
      PyCallable_Check(file.ptr())) {
    ExportedGraph g = trace_for_export(wrap(fun), a, k, shapeless);
    nb::dict d = graph_dict(g, shapeless);
    d["metadata"] = metadata ? *metadata : std::string();
    file(d);
    return;
  }
  export_function(path_of(file, "export_function"), wrap(fun), a, k,
                  ExportOptions{shapeless, metadata.value_or(""), optimize_memory});
}

nb::tuple call_imported(const ImportedFunction& f, nb::args args, nb::kwargs kwargs) {
  auto [a, k] = extract_inputs(args, kwargs, "[import_function]");
  std::vector<array> outs = f(a, k);
  nb::list l;
  for (auto& o : outs) {
    l.append(nb::cast(o));
  }
  return nb::tuple(l);
}

}  // namespace

void init_export(nb::module_& m) {
  nb::class_<ImportedFunction>(m, "ImportedFunction",
                               "A function read by import_function: call it with inputs like "
                               "those it was exported with; it returns a tuple of arrays.")
      .def("__call__", &call_imported, nb::arg("args"), nb::arg("kwargs"),
           "Runs the trace whose input signature matches.");

  nb::class_<FunctionExporter>(m, "FunctionExporter", docstring("FunctionExporter"))
      .def(
          "__call__",
          [](FunctionExporter& e, nb::args args, nb::kwargs kwargs) {
            auto [a, k] = extract_inputs(args, kwargs, "[FunctionExporter]");
            e(a, k);
          },
          nb::arg("args"), nb::arg("kwargs"), "Traces the function on inputs like these.")
      .def("close", &FunctionExporter::close, "Writes the file (once).")
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def(
          "__exit__", [](FunctionExporter& e, nb::handle, nb::handle, nb::handle) { e.close(); },
          nb::arg("exc_type").none(), nb::arg("exc_value").none(), nb::arg("traceback").none());

  m.def(
      "export_function",
      [](nb::object file, nb::callable fun, nb::args args, bool shapeless,
         std::optional<std::string> metadata,
         nb::kwargs kwargs) { export_any(file, fun, args, shapeless, metadata, kwargs, false); },
      nb::arg("file_or_callback"), nb::arg("fun"), nb::arg("args"), nb::kw_only(),
      nb::arg("shapeless") = false, nb::arg("metadata") = nb::none(), nb::arg("kwargs"),
      docstring("export_function"));
  m.def(
      "_export_function",
      [](nb::object file, nb::callable fun, nb::tuple args, nb::dict kwargs, bool shapeless,
         std::optional<std::string> metadata, bool optimize_memory) {
        export_any(file, fun, nb::borrow<nb::args>(args), shapeless, metadata,
                   nb::borrow<nb::kwargs>(kwargs), optimize_memory);
      },
      nb::arg("file"), nb::arg("fun"), nb::arg("args"), nb::arg("kwargs"),
      nb::arg("shapeless") = false, nb::arg("metadata") = nb::none(),
      nb::arg("optimize_memory") = false,
      "export_function with a memory plan (optimize_memory), for nn.Module.export.");
  m.def(
      "import_function",
      [](nb::object file, bool return_metadata) -> nb::object {
        std::string path = path_of(file, "import_function");
        ImportedFunction f = [&] {
          nb::gil_scoped_release release;
          return import_function(path);
        }();
        nb::object fn = nb::cast(f);
        if (return_metadata) {
          return nb::make_tuple(fn, nb::str(f.metadata().data(), f.metadata().size()));
        }
        return fn;
      },
      nb::arg("file"), nb::arg("return_metadata") = false, docstring("import_function"));
  m.def(
      "exporter",
      [](nb::object file, nb::callable fun, bool shapeless, std::optional<std::string> metadata) {
        return new FunctionExporter(path_of(file, "exporter"), wrap(fun),
                                    ExportOptions{shapeless, metadata.value_or(""), false});
      },
      nb::arg("file"), nb::arg("fun"), nb::kw_only(), nb::arg("shapeless") = false,
      nb::arg("metadata") = nb::none(), nb::rv_policy::take_ownership, docstring("exporter"));
  m.def(
      "export_to_dot",
      [](nb::object file, nb::args args, nb::kwargs kwargs) {
        std::vector<array> outputs;
        for (nb::handle h : args) {
          for (auto& a : tree_flatten(h, true, "export_to_dot")) {
            outputs.push_back(a);
          }
        }
        std::map<std::string, array> names;
        for (auto [k, v] : kwargs) {
          names.insert_or_assign(nb::cast<std::string>(k), expect_array(v, "[export_to_dot]"));
          outputs.push_back(nb::cast<array>(v));
        }
        std::ostringstream os;
        export_to_dot(os, outputs, names);
        std::string text = os.str();
        if (nb::hasattr(file, "write") && !nb::isinstance<nb::str>(file)) {
          file.attr("write")(nb::str(text.data(), text.size()));
          return;
        }
        std::string path = path_of(file, "export_to_dot");
        std::ofstream f(path);
        f << text;
        if (!f) {
          throw std::runtime_error("[export_to_dot] Could not write '" + path + "'.");
        }
      },
      nb::arg("file"), nb::arg("args"), nb::arg("kwargs"), docstring("export_to_dot"));
}
