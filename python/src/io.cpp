// Saving and loading arrays: mx.save, mx.savez, mx.savez_compressed, mx.save_safetensors and
// mx.load, for paths (str or os.PathLike) and binary file-like objects.
#include "mlx/io/io.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "python/src/bindings.h"
#include "python/src/convert.h"
#include "python/src/docstrings.h"

namespace nb = nanobind;
using namespace mlx::core;
using namespace mlx::core::python;

namespace {

// The path of a str or os.PathLike argument; nothing for file-like objects.
std::optional<std::string> as_path(nb::handle file) {
  if (nb::isinstance<nb::str>(file)) {
    return nb::cast<std::string>(file);
  }
  if (nb::hasattr(file, "__fspath__")) {
    nb::object p = nb::module_::import_("os").attr("fsdecode")(file);
    return nb::cast<std::string>(p);
  }
  return std::nullopt;
}

std::string label_of(nb::handle file) {
  if (nb::hasattr(file, "name")) {
    nb::object name = file.attr("name");
    if (nb::isinstance<nb::str>(name)) {
      return nb::cast<std::string>(name);
    }
  }
  return "<file-like object>";
}

void require_methods(nb::handle file, std::initializer_list<const char*> methods,
                     const std::string& op) {
  for (const char* m : methods) {
    if (!nb::hasattr(file, m)) {
      throw nb::type_error(("[" + op + "] Expected a path or a binary file-like object with " + m +
                            "(); got " + nb::type_name(file.type()).c_str() + ".")
                               .c_str());
    }
  }
}

// Reads a seekable binary file object from its current position (like NumPy, so several
// arrays saved one after another load one after another). The object outlives the reader:
// it is an argument of the bound call. Methods run with the GIL taken back.
class PyReader : public io::Reader {
 public:
  explicit PyReader(nb::handle file) : file_(file), label_(label_of(file)) {
    require_methods(file, {"read", "seek", "tell"}, "load");
    start_ = nb::cast<uint64_t>(file.attr("tell")());
    uint64_t end = nb::cast<uint64_t>(file.attr("seek")(0, 2));
    size_ = end > start_ ? end - start_ : 0;
    file.attr("seek")(start_);
    readinto_ = nb::hasattr(file, "readinto");
  }
  uint64_t size() override { return size_; }
  std::string label() const override { return label_; }

  void read(char* data, size_t n, uint64_t offset) override {
    nb::gil_scoped_acquire gil;
    file_.attr("seek")(start_ + offset);
    size_t got = 0;
    while (got < n) {
      size_t len = n - got;
      size_t step;
      if (readinto_) {
        nb::object view = nb::steal(
            PyMemoryView_FromMemory(data + got, static_cast<Py_ssize_t>(len), PyBUF_WRITE));
        if (!view.is_valid()) {
          throw nb::python_error();
        }
        nb::object r = file_.attr("readinto")(view);
        step = r.is_none() ? 0 : nb::cast<size_t>(r);
      } else {
        nb::bytes chunk = nb::cast<nb::bytes>(file_.attr("read")(len));
        step = std::min(chunk.size(), len);
        std::memcpy(data + got, chunk.c_str(), step);
      }
      if (step == 0) {
        throw std::runtime_error("Unexpected end of '" + label_ + "' (was it changed?).");
      }
      got += step;
    }
  }

 private:
  nb::handle file_;
  std::string label_;
  uint64_t start_ = 0;
  uint64_t size_ = 0;
  bool readinto_ = false;
};

class PyWriter : public io::Writer {
 public:
  PyWriter(nb::handle file, const std::string& op) : file_(file), label_(label_of(file)) {
    require_methods(file, {"write"}, op);
  }
  std::string label() const override { return label_; }

  void write(const char* data, size_t n) override {
    nb::gil_scoped_acquire gil;
    size_t done = 0;
    while (done < n) {
      nb::object view = nb::steal(PyMemoryView_FromMemory(
          const_cast<char*>(data + done), static_cast<Py_ssize_t>(n - done), PyBUF_READ));
      if (!view.is_valid()) {
        throw nb::python_error();
      }
      nb::object r = file_.attr("write")(view);
      // Raw files may write part of the data; buffered ones return the full count (or None).
      size_t step = r.is_none() ? n - done : nb::cast<size_t>(r);
      if (step == 0) {
        throw std::runtime_error("Failed to write to '" + label_ + "'.");
      }
      done += step;
    }
  }

 private:
  nb::handle file_;
  std::string label_;
};

array as_array(nb::handle obj) {
  return nb::isinstance<array>(obj) ? nb::cast<array>(obj) : array_from_python(obj);
}

[[noreturn]] void file_not_found(const std::string& path) {
  nb::object err = nb::borrow(PyExc_FileNotFoundError)(ENOENT, std::strerror(ENOENT), path);
  PyErr_SetObject(PyExc_FileNotFoundError, err.ptr());
  throw nb::python_error();
}

// The extension of `name` after its last dot, if the last path component has one.
std::string extension(const std::string& name) {
  std::string ext = std::filesystem::path(name).extension().string();
  return ext.empty() ? "" : ext.substr(1);
}

nb::dict to_dict(std::unordered_map<std::string, array> arrays) {
  nb::dict d;
  for (auto& [name, a] : arrays) {
    d[nb::str(name.data(), name.size())] = nb::cast(std::move(a));
  }
  return d;
}

nb::object load_any(nb::object file, std::optional<std::string> format, bool return_metadata,
                    StreamOrDevice s) {
  std::optional<std::string> path = as_path(file);
  std::string fmt = format ? *format : extension(path ? *path : label_of(file));
  if (fmt.empty()) {
    throw std::invalid_argument("[load] Could not infer the format of '" +
                                (path ? *path : label_of(file)) +
                                "' from its extension; pass format= (npy, npz or safetensors).");
  }
  if (fmt != "npy" && fmt != "npz" && fmt != "safetensors" && fmt != "gguf") {
    throw std::invalid_argument("[load] Unknown format '" + fmt +
                                "'; expected npy, npz, safetensors or gguf.");
  }
  if (return_metadata && fmt != "safetensors" && fmt != "gguf") {
    throw std::invalid_argument("[load] Metadata is not supported for format " + fmt + ".");
  }
  std::shared_ptr<io::Reader> reader;
  if (path) {
    std::error_code ec;
    if (!std::filesystem::exists(*path, ec)) {
      file_not_found(*path);
    }
  } else {
    reader = std::make_shared<PyReader>(file);
  }
  std::variant<std::monostate, array, std::unordered_map<std::string, array>, SafetensorsLoad,
               GGUFLoad>
      result;
  {
    nb::gil_scoped_release release;
    if (fmt == "gguf") {
      result = path ? load_gguf(*path, s) : load_gguf(reader, s);
    } else if (fmt == "npy") {
      result = path ? load(*path, s) : load(reader, s);
    } else if (fmt == "npz") {
      result = path ? load_npz(*path, s) : load_npz(reader, s);
    } else {
      result = path ? load_safetensors(*path, s) : load_safetensors(reader, s);
    }
  }
  if (auto* a = std::get_if<array>(&result)) {
    return nb::cast(std::move(*a));
  }
  if (auto* m = std::get_if<std::unordered_map<std::string, array>>(&result)) {
    return to_dict(std::move(*m));
  }
  if (auto* g = std::get_if<GGUFLoad>(&result)) {
    nb::dict arrays_dict = to_dict(std::move(g->first));
    if (!return_metadata) {
      return arrays_dict;
    }
    nb::dict meta;
    for (auto& [k, v] : g->second) {
      nb::str key(k.data(), k.size());
      if (auto* a = std::get_if<array>(&v)) {
        meta[key] = nb::cast(*a);
      } else if (auto* str = std::get_if<std::string>(&v)) {
        meta[key] = nb::str(str->data(), str->size());
      } else if (auto* l = std::get_if<std::vector<std::string>>(&v)) {
        nb::list items;
        for (auto& item : *l) {
          items.append(nb::str(item.data(), item.size()));
        }
        meta[key] = items;
      } else {
        meta[key] = nb::none();
      }
    }
    return nb::make_tuple(arrays_dict, meta);
  }
  auto& [arrays, metadata] = std::get<SafetensorsLoad>(result);
  nb::dict arrays_dict = to_dict(std::move(arrays));
  if (!return_metadata) {
    return arrays_dict;
  }
  nb::dict meta;
  for (auto& [k, v] : metadata) {
    meta[nb::str(k.data(), k.size())] = nb::str(v.data(), v.size());
  }
  return nb::make_tuple(arrays_dict, meta);
}

// Runs `save_fn(path)` for paths or `save_fn(writer)` for file-like objects, without the GIL.
template <typename F>
void save_to(nb::handle file, const std::string& op, F&& save_fn) {
  if (auto path = as_path(file)) {
    nb::gil_scoped_release release;
    save_fn(*path);
    return;
  }
  auto writer = std::make_shared<PyWriter>(file, op);
  nb::gil_scoped_release release;
  save_fn(std::shared_ptr<io::Writer>(writer));
}

void savez_any(nb::handle file, nb::args args, nb::kwargs kwargs, bool compressed) {
  const char* op = compressed ? "savez_compressed" : "savez";
  std::vector<std::pair<std::string, array>> arrays;
  for (size_t i = 0; i < args.size(); ++i) {
    arrays.emplace_back("arr_" + std::to_string(i), as_array(args[i]));
  }
  for (auto [key, value] : kwargs) {
    std::string name = nb::cast<std::string>(key);
    for (size_t i = 0; i < args.size(); ++i) {
      if (arrays[i].first == name) {
        throw std::invalid_argument(std::string("[") + op +
                                    "] Cannot use un-named variables and keyword " + name + ".");
      }
    }
    arrays.emplace_back(std::move(name), as_array(value));
  }
  save_to(file, op,
          [&](auto&& dst) { compressed ? savez_compressed(dst, arrays) : savez(dst, arrays); });
}

}  // namespace

void init_io(nb::module_& m) {
  m.def("load", &load_any, nb::arg("file"), nb::arg("format") = nb::none(),
        nb::arg("return_metadata") = false, nb::kw_only(), nb::arg("stream") = nb::none(),
        R"(Load array(s) from a binary file: .npy gives an array, .npz, .safetensors and .gguf a
dict of names to arrays, and with return_metadata=True (safetensors, gguf) a tuple (arrays,
metadata). The format comes from the file extension unless format is given. .safetensors and
.gguf files given by path load lazily: each array is read when it is evaluated. GGUF metadata
values are arrays (numbers), strings or lists of strings; Q4_0, Q4_1 and Q8_0 tensors load in
MLX's quantized layout as "<name>.weight", "<name>.scales" and "<name>.biases" (group size 32);
Q5_0, Q5_1, Q4_K, Q5_K and Q6_K tensors are dequantized to float16.)");
  m.def(
      "save",
      [](nb::object file, nb::object arr) {
        array a = as_array(arr);
        save_to(file, "save", [&](auto&& dst) { save(dst, a); });
      },
      nb::arg("file"), nb::arg("arr"),
      R"(Save the array to a binary file in .npy format; ".npy" is appended to paths without it.)");
  m.def(
      "savez",
      [](nb::object file, nb::args args, nb::kwargs kwargs) {
        savez_any(file, args, kwargs, false);
      },
      nb::arg("file"), nb::arg("args"), nb::arg("kwargs"),
      R"(Save several arrays to a binary file in uncompressed .npz format; positional arrays
are named arr_0, arr_1, ...)");
  m.def(
      "savez_compressed",
      [](nb::object file, nb::args args, nb::kwargs kwargs) {
        savez_any(file, args, kwargs, true);
      },
      nb::arg("file"), nb::arg("args"), nb::arg("kwargs"),
      R"(Save several arrays to a binary file in compressed .npz format.)");
  m.def(
      "save_safetensors",
      [](nb::object file, nb::dict arrays, std::optional<nb::dict> metadata) {
        std::unordered_map<std::string, array> named;
        for (auto [key, value] : arrays) {
          named.emplace(nb::cast<std::string>(key), as_array(value));
        }
        std::unordered_map<std::string, std::string> meta;
        if (metadata) {
          for (auto [key, value] : *metadata) {
            if (!nb::isinstance<nb::str>(value)) {
              throw nb::type_error("[save_safetensors] Metadata values must be strings.");
            }
            meta.emplace(nb::cast<std::string>(key), nb::cast<std::string>(value));
          }
        }
        save_to(file, "save_safetensors", [&](auto&& dst) { save_safetensors(dst, named, meta); });
      },
      nb::arg("file"), nb::arg("arrays"), nb::arg("metadata") = nb::none(),
      R"(Save array(s) to a binary file in .safetensors format, with optional string metadata.)");
  m.def(
      "save_gguf",
      [](nb::object file, nb::dict arrays, std::optional<nb::dict> metadata) {
        std::unordered_map<std::string, array> named;
        for (auto [key, value] : arrays) {
          named.emplace(nb::cast<std::string>(key), as_array(value));
        }
        std::unordered_map<std::string, GGUFMetaData> meta;
        if (metadata) {
          for (auto [key, value] : *metadata) {
            std::string k = nb::cast<std::string>(key);
            if (nb::isinstance<nb::str>(value)) {
              meta.emplace(k, nb::cast<std::string>(value));
            } else if (nb::isinstance<array>(value)) {
              meta.emplace(k, nb::cast<array>(value));
            } else if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
              std::vector<std::string> items;
              for (nb::handle item : value) {
                if (!nb::isinstance<nb::str>(item)) {
                  throw nb::type_error(
                      ("[save_gguf] Metadata list '" + k + "' must hold only strings.").c_str());
                }
                items.push_back(nb::cast<std::string>(item));
              }
              meta.emplace(k, std::move(items));
            } else {
              throw nb::type_error(("[save_gguf] Metadata '" + k +
                                    "' must be an array, a string or a list of strings.")
                                       .c_str());
            }
          }
        }
        save_to(file, "save_gguf", [&](auto&& dst) { save_gguf(dst, named, meta); });
      },
      nb::arg("file"), nb::arg("arrays"), nb::arg("metadata") = nb::none(), docstring("save_gguf"));
}
