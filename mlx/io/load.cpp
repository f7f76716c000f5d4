// .npy and .npz: the public save/load functions.
#include <stdexcept>
#include <unordered_set>

#include "mlx/io/io.h"
#include "mlx/io/npy.h"
#include "mlx/io/zip.h"
#include "mlx/runtime/eval.h"

namespace mlx::core {

namespace io::detail {

void write_npz(Writer& out, const std::vector<std::pair<std::string, array>>& arrays, bool compress,
               const char* op, uint64_t zip64_limit) {
  std::unordered_set<std::string> names;
  std::vector<array> all;
  for (auto& [name, a] : arrays) {
    if (!names.insert(name).second) {
      throw std::invalid_argument(std::string("[") + op + "] Duplicate array name '" + name + "'.");
    }
    all.push_back(a);
  }
  eval(all);
  ZipWriter zip(out, zip64_limit);
  for (auto& [name, a] : arrays) {
    DenseArray d = dense_for_save(a);
    std::string header = npy_header(d);
    zip.add(name + ".npy", {header, d.bytes()}, compress);
  }
  zip.finish();
}

}  // namespace io::detail

namespace {

using namespace io::detail;

void write_npy(io::Writer& out, const DenseArray& d) {
  std::string header = npy_header(d);
  out.write(header.data(), header.size());
  out.write(d.bytes().data(), d.bytes().size());
  out.flush();
}

}  // namespace

void save(std::shared_ptr<io::Writer> out_stream, array a) {
  auto& out = checked(out_stream, "save");
  write_npy(out, dense_for_save(std::move(a)));
}

void save(std::string file, array a) {
  DenseArray d = dense_for_save(std::move(a));  // before creating the file
  write_npy(*open_writer("save", with_extension(std::move(file), ".npy")), d);
}

array load(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s) {
  auto& in = checked(in_stream, "load");
  Context ctx{"load", ".npy", in.label()};
  RegionSource src(in, 0, in.size(), ctx);
  return read_npy(src, ctx, /* exact = */ false);
}

array load(std::string file, StreamOrDevice s) { return load(open_reader("load", file), s); }

void savez(std::shared_ptr<io::Writer> out_stream,
           const std::vector<std::pair<std::string, array>>& arrays) {
  write_npz(checked(out_stream, "savez"), arrays, false, "savez");
}

void savez(std::string file, const std::vector<std::pair<std::string, array>>& arrays) {
  auto out = open_writer("savez", with_extension(std::move(file), ".npz"));
  write_npz(*out, arrays, false, "savez");
}

void savez_compressed(std::shared_ptr<io::Writer> out_stream,
                      const std::vector<std::pair<std::string, array>>& arrays) {
  write_npz(checked(out_stream, "savez_compressed"), arrays, true, "savez_compressed");
}

void savez_compressed(std::string file, const std::vector<std::pair<std::string, array>>& arrays) {
  auto out = open_writer("savez_compressed", with_extension(std::move(file), ".npz"));
  write_npz(*out, arrays, true, "savez_compressed");
}

std::unordered_map<std::string, array> load_npz(std::shared_ptr<io::Reader> in_stream,
                                                StreamOrDevice s) {
  auto& in = checked(in_stream, "load");
  Context ctx{"load", ".npz", in.label()};
  std::unordered_map<std::string, array> out;
  for (auto& e : read_zip_directory(in, ctx)) {
    Context member{"load", ".npz", in.label(), e.name};
    auto src = open_zip_entry(in, e, member);
    std::string name = e.name;
    if (name.size() >= 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
      name.resize(name.size() - 4);
    }
    if (out.count(name)) {
      ctx.fail("duplicate member '" + e.name + "'");
    }
    out.emplace(std::move(name), read_npy(*src, member, /* exact = */ true));
  }
  return out;
}

std::unordered_map<std::string, array> load_npz(const std::string& file, StreamOrDevice s) {
  return load_npz(open_reader("load", file), s);
}

}  // namespace mlx::core
