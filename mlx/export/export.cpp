// export_function / import_function: tracing into compile's program, the file format, and
// the imported function's dispatch and replay.
//
// File layout (version 2, little-endian; version 1 numbered the elementwise ops differently):
//   "MLXLNXFN"  u32 version  u64 header_bytes  header  [zero padding]  data
// The data section starts at the first multiple of 64 after the header; constants are stored
// there row-contiguous, each at a 64-byte aligned offset. The header (StateWriter fields):
//   str metadata
//   u32 constant count, per constant: dtype, shape, u64 offset, u64 bytes
//   u32 trace count, per trace:
//     bool shapeless, bool chained, u32 positional count, keyword names (sorted),
//     input dtypes and shapes, u32 value count,
//     constants: (u32 value, u32 constant) pairs,
//     steps: (str primitive blob, u32 input ids, output dtypes, output shapes, u32 first
//     output id), u32 output ids (ids are a u32 count then u32 values, numbered densely)
// A primitive blob is write_state's bytes: the class name, then its parameters.
#include "mlx/export/export.h"

#include <algorithm>
#include <climits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "mlx/export/export_detail.h"
#include "mlx/export/memory_plan.h"
#include "mlx/export/validate.h"
#include "mlx/io/detail.h"
#include "mlx/ops/creation.h"
#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"
#include "mlx/runtime/eval.h"
#include "mlx/transforms/schedule.h"
#include "mlx/transforms/transforms.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace detail {

namespace {

constexpr char kMagic[8] = {'M', 'L', 'X', 'L', 'N', 'X', 'F', 'N'};
constexpr uint32_t kVersion = 2;
constexpr uint64_t kAlign = 64;
constexpr uint64_t kMaxHeaderBytes = uint64_t(1) << 30;
constexpr size_t kMaxDims = 64;

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string signature_text(const std::vector<Dtype>& dtypes, const std::vector<Shape>& shapes,
                           size_t num_args, const std::vector<std::string>& names) {
  std::string s = "(";
  for (size_t i = 0; i < dtypes.size(); ++i) {
    s += i ? ", " : "";
    if (i >= num_args) {
      s += names[i - num_args] + "=";
    }
    s += to_string(shapes[i]) + " " + dtype_name(dtypes[i]);
  }
  return s + ")";
}

// The nodes of a custom function stand for themselves: its outputs are aliases of the outputs
// of the function's own graph (inputs num_primals... of the node).
void inline_custom_functions(Program& p) {
  std::vector<int> alias(p.num_values);
  for (size_t i = 0; i < alias.size(); ++i) {
    alias[i] = static_cast<int>(i);
  }
  std::vector<ProgramStep> kept;
  for (auto& step : p.steps) {
    for (int& in : step.inputs) {
      in = alias[in];
    }
    if (auto* ct = dynamic_cast<CustomTransforms*>(step.primitive.get())) {
      for (size_t k = 0; k < step.shapes.size(); ++k) {
        alias[step.first_output + k] = step.inputs[ct->num_primals() + k];
      }
      continue;
    }
    kept.push_back(std::move(step));
  }
  p.steps = std::move(kept);
  for (int& o : p.outputs) {
    o = alias[o];
  }
}

// Renumbers the values densely (inputs, constants, then step outputs), so that every value id
// below num_values is defined (the reader checks it).
void compact_values(Program& p) {
  std::vector<int> id(p.num_values, -1);
  int next = 0;
  for (size_t i = 0; i < p.num_inputs; ++i) {
    id[i] = next++;
  }
  for (auto& [v, c] : p.constants) {
    id[v] = next++;
    v = id[v];
  }
  for (auto& step : p.steps) {
    for (int& in : step.inputs) {
      in = id[in];
    }
    int first = next;
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      id[step.first_output + k] = next++;
    }
    step.first_output = first;
  }
  for (int& o : p.outputs) {
    o = id[o];
  }
  p.num_values = next;
}

void reorder_steps(Program& p, const std::vector<int>& order) {
  std::vector<ProgramStep> steps;
  steps.reserve(order.size());
  for (int s : order) {
    steps.push_back(std::move(p.steps[s]));
  }
  p.steps = std::move(steps);
}

}  // namespace

ExportedTrace trace_program(const ExportFn& fun, const Args& args, const Kwargs& kwargs,
                            bool shapeless) {
  ExportedTrace t;
  t.shapeless = shapeless;
  t.num_args = args.size();
  std::vector<array> placeholders;
  {
    TracingScope scope;
    ShapelessScope shapeless_scope(shapeless);
    UnfusedScope unfused;  // compiled functions called by fun add ordinary primitives
    auto placeholder = [&](const array& a) {
      t.dtypes.push_back(a.dtype());
      t.shapes.push_back(a.shape());
      placeholders.emplace_back(a.shape(), a.dtype(), nullptr, std::vector<array>{});
      placeholders.back().set_tracer(true);
      return placeholders.back();
    };
    Args targs;
    for (auto& a : args) {
      targs.push_back(placeholder(a));
    }
    Kwargs tkwargs;
    for (auto& [name, a] : kwargs) {
      t.keyword_names.push_back(name);
      tkwargs.emplace(name, placeholder(a));
    }
    std::vector<array> outputs = fun(targs, tkwargs);
    if (outputs.empty()) {
      throw std::invalid_argument("[export_function] The function returned no arrays.");
    }
    t.program = build_program(placeholders, outputs, shapeless);
  }
  inline_custom_functions(t.program);
  compact_values(t.program);
  return t;
}

void optimize_memory(ExportedTrace& t) {
  // The better of the Sethi-Ullman order and the greedy schedule for this program.
  std::vector<int> order = plan_memory_order(t.program), greedy = memory_schedule(t.program);
  if (planned_peak_bytes(t.program, greedy) < planned_peak_bytes(t.program, order)) {
    order = std::move(greedy);
  }
  reorder_steps(t.program, order);
  t.chained = true;
}

// ---- writing ---------------------------------------------------------------------------

namespace {
// Value ids: a u32 count, then u32 each (read by read_index).
void put_indices(serial::StateWriter& w, const std::vector<int>& ids) {
  w.u32(static_cast<uint32_t>(ids.size()));
  for (int i : ids) {
    w.u32(static_cast<uint32_t>(i));
  }
}
}  // namespace

std::string write_file_bytes_header(const std::string& metadata,
                                    const std::vector<std::shared_ptr<ExportedTrace>>& traces,
                                    std::vector<array>& constants) {
  serial::StateWriter w;
  w.str(metadata);
  // Constants shared by traces (captured weights) are stored once.
  std::unordered_map<uintptr_t, uint32_t> constant_index;
  for (auto& t : traces) {
    for (auto& [value, c] : t->program.constants) {
      if (constant_index.emplace(c.id(), static_cast<uint32_t>(constants.size())).second) {
        constants.push_back(c);
      }
    }
  }
  for (auto& c : constants) {
    c = contiguous(c);
  }
  eval(constants);
  w.u32(static_cast<uint32_t>(constants.size()));
  uint64_t offset = 0;
  for (auto& c : constants) {
    serial::Codec<Dtype>::put(w, c.dtype());
    serial::Codec<Shape>::put(w, c.shape());
    w.u64(offset);
    w.u64(c.nbytes());
    offset = align_up(offset + c.nbytes());
  }
  w.u32(static_cast<uint32_t>(traces.size()));
  for (auto& tp : traces) {
    auto& t = *tp;
    const Program& p = t.program;
    serial::Codec<bool>::put(w, t.shapeless);
    serial::Codec<bool>::put(w, t.chained);
    w.u32(static_cast<uint32_t>(t.num_args));
    w.u32(static_cast<uint32_t>(t.keyword_names.size()));
    for (auto& n : t.keyword_names) {
      w.str(n);
    }
    for (size_t i = 0; i < t.dtypes.size(); ++i) {
      serial::Codec<Dtype>::put(w, t.dtypes[i]);
      serial::Codec<Shape>::put(w, t.shapes[i]);
    }
    w.u32(static_cast<uint32_t>(p.num_values));
    w.u32(static_cast<uint32_t>(p.constants.size()));
    for (auto& [value, c] : p.constants) {
      w.u32(static_cast<uint32_t>(value));
      w.u32(constant_index.at(c.id()));
    }
    w.u32(static_cast<uint32_t>(p.steps.size()));
    for (auto& step : p.steps) {
      serial::StateWriter blob;
      step.primitive->write_state(blob);
      w.str(blob.bytes());
      put_indices(w, step.inputs);
      serial::Codec<std::vector<Dtype>>::put(w, step.dtypes);
      serial::Codec<std::vector<Shape>>::put(w, step.shapes);
      w.u32(static_cast<uint32_t>(step.first_output));
    }
    put_indices(w, p.outputs);
  }
  return std::move(w.bytes());
}

void write_export_file(const std::string& file, const std::string& metadata,
                       const std::vector<std::shared_ptr<ExportedTrace>>& traces) {
  std::vector<array> constants;
  std::string header = write_file_bytes_header(metadata, traces, constants);
  std::string prefix(kMagic, sizeof(kMagic));
  io::detail::put_le(prefix, kVersion, 4);
  io::detail::put_le(prefix, header.size(), 8);
  prefix += header;
  prefix.append(align_up(prefix.size()) - prefix.size(), '\0');
  auto out = io::detail::open_writer("export_function", file);
  out->write(prefix.data(), prefix.size());
  static const char zeros[kAlign] = {};
  // The file ends with the last constant's last byte: any truncation is detected.
  for (size_t i = 0; i < constants.size(); ++i) {
    auto& c = constants[i];
    out->write(c.data<char>(), c.nbytes());
    if (i + 1 < constants.size()) {
      out->write(zeros, align_up(c.nbytes()) - c.nbytes());
    }
  }
  out->flush();
}

// ---- reading ---------------------------------------------------------------------------

namespace {

Shape read_shape(serial::StateReader& r) {
  size_t nd = r.count(8);
  if (nd > kMaxDims) {
    r.fail("a shape has " + std::to_string(nd) + " dimensions (at most 64)");
  }
  Shape s;
  uint64_t numel = 1;
  for (size_t i = 0; i < nd; ++i) {
    int64_t d = r.i64();
    if (d < 0 || d > INT32_MAX) {
      r.fail("a shape has dimension " + std::to_string(d));
    }
    numel = d == 0 ? 0 : (numel > (uint64_t(1) << 48) / d ? (uint64_t(1) << 49) : numel * d);
    s.push_back(static_cast<int32_t>(d));
  }
  if (numel > (uint64_t(1) << 48)) {
    r.fail("a shape " + to_string(s) + " has more than 2^48 elements");
  }
  return s;
}

uint32_t read_index(serial::StateReader& r, size_t limit, const char* what) {
  uint32_t v = r.u32();
  if (v >= limit) {
    r.fail(std::string(what) + " " + std::to_string(v) + " is out of range (" +
           std::to_string(limit) + ")");
  }
  return v;
}

}  // namespace

std::shared_ptr<ImportedFile> read_export_file(const std::string& file) {
  auto reader = io::detail::open_reader("import_function", file);
  const std::string ctx = "[import_function] Invalid function file '" + file + "'";
  auto fail = [&](const std::string& why) -> void {
    throw std::runtime_error(ctx + ": " + why + ".");
  };
  uint64_t size = reader->size();
  if (size < 20) {
    fail("too short (" + std::to_string(size) + " bytes)");
  }
  char head[20];
  reader->read(head, 20, 0);
  if (std::string_view(head, 8) != std::string_view(kMagic, 8)) {
    fail("not an exported function (bad magic)");
  }
  uint32_t version = io::detail::get_u32(head + 8);
  if (version != kVersion) {
    fail("format version " + std::to_string(version) + " is not supported (this build reads " +
         std::to_string(kVersion) + ")");
  }
  uint64_t header_bytes = io::detail::get_u64(head + 12);
  if (header_bytes > size - 20 || header_bytes > kMaxHeaderBytes) {
    fail("header of " + std::to_string(header_bytes) + " bytes exceeds the file");
  }
  std::string header(header_bytes, '\0');
  reader->read(header.data(), header.size(), 20);
  uint64_t data_start = align_up(20 + header_bytes);
  uint64_t data_bytes = data_start <= size ? size - data_start : 0;

  serial::StateReader r(header, ctx);
  auto result = std::make_shared<ImportedFile>();
  result->metadata = r.str();

  // Constants: checked against the data section before any is allocated.
  struct ConstantInfo {
    Dtype dtype;
    Shape shape;
    uint64_t offset, bytes;
  };
  std::vector<ConstantInfo> infos;
  size_t num_constants = r.count(1 + 4 + 16);
  for (size_t i = 0; i < num_constants; ++i) {
    Dtype dt = serial::Codec<Dtype>::get(r);
    Shape shape = read_shape(r);
    uint64_t offset = r.u64(), bytes = r.u64();
    uint64_t expected = size_of(dt);
    for (int d : shape) {
      expected *= d;
    }
    if (bytes != expected) {
      r.fail("constant " + std::to_string(i) + " of shape " + to_string(shape) + " declares " +
             std::to_string(bytes) + " bytes");
    }
    if (offset > data_bytes || bytes > data_bytes - offset) {
      r.fail("constant " + std::to_string(i) + " lies outside the " + std::to_string(data_bytes) +
             " bytes of data");
    }
    infos.push_back({dt, std::move(shape), offset, bytes});
  }

  size_t num_traces = r.count(1);
  if (num_traces == 0) {
    r.fail("the file holds no trace");
  }
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> trace_constants;
  for (size_t ti = 0; ti < num_traces; ++ti) {
    ExportedTrace t;
    t.shapeless = serial::Codec<bool>::get(r);
    t.chained = serial::Codec<bool>::get(r);
    t.num_args = r.u32();
    size_t num_kw = r.count(4);
    std::set<std::string> seen_names;
    for (size_t i = 0; i < num_kw; ++i) {
      t.keyword_names.push_back(r.str());
      if (!seen_names.insert(t.keyword_names.back()).second) {
        r.fail("keyword '" + t.keyword_names.back() + "' appears twice");
      }
    }
    if (t.num_args > r.remaining()) {
      r.fail("the input count " + std::to_string(t.num_args) + " exceeds the header");
    }
    size_t num_inputs = t.num_args + num_kw;
    for (size_t i = 0; i < num_inputs; ++i) {
      t.dtypes.push_back(serial::Codec<Dtype>::get(r));
      t.shapes.push_back(read_shape(r));
    }
    Program& p = t.program;
    p.num_inputs = num_inputs;
    p.num_values = r.u32();
    // Every value is defined by an input, a constant or a step output, each at least 4 bytes.
    if (p.num_values < num_inputs || p.num_values - num_inputs > r.remaining() / 4) {
      r.fail("the value count " + std::to_string(p.num_values) + " does not fit the header");
    }
    std::vector<char> defined(p.num_values, 0);
    size_t num_defined = 0;
    // Placeholders carrying the shape and dtype of each value defined so far (as many as the
    // file defines, not as many as it declares).
    std::unordered_map<uint32_t, array> shape_of;
    auto define = [&](uint32_t v, const Shape& s, Dtype d) {
      if (defined[v]) {
        r.fail("value " + std::to_string(v) + " is defined twice");
      }
      defined[v] = 1;
      ++num_defined;
      shape_of.insert_or_assign(v, array(s, d, nullptr, {}));
    };
    for (size_t i = 0; i < num_inputs; ++i) {
      define(static_cast<uint32_t>(i), t.shapes[i], t.dtypes[i]);
    }
    size_t nc = r.count(8);
    std::vector<std::pair<uint32_t, uint32_t>> consts;
    for (size_t i = 0; i < nc; ++i) {
      uint32_t v = read_index(r, p.num_values, "constant value");
      uint32_t c = read_index(r, infos.size(), "constant");
      define(v, infos[c].shape, infos[c].dtype);
      consts.emplace_back(v, c);
    }
    size_t num_steps = r.count(4 + 4 + 4 + 4 + 4);
    Stream stream = default_stream(default_device());
    for (size_t si = 0; si < num_steps; ++si) {
      std::string blob = r.str();
      serial::StateReader br(blob, ctx + " (step " + std::to_string(si) + ")");
      std::string name = br.str();
      serial::Factory factory = serial::find_factory(name);
      if (!factory) {
        r.fail("step " + std::to_string(si) + " uses unknown primitive '" + name + "'");
      }
      ProgramStep step;
      step.primitive = factory(stream, br);
      if (br.remaining() != 0) {
        br.fail("the parameters of " + name + " have " + std::to_string(br.remaining()) +
                " trailing bytes");
      }
      size_t ni = r.count(4);
      std::vector<array> ins;
      for (size_t i = 0; i < ni; ++i) {
        uint32_t v = read_index(r, p.num_values, "input value");
        if (!defined[v]) {
          r.fail("step " + std::to_string(si) + " reads value " + std::to_string(v) +
                 " before it is defined");
        }
        step.inputs.push_back(static_cast<int>(v));
        ins.push_back(shape_of.at(v));
      }
      size_t nd = r.count(1);
      for (size_t i = 0; i < nd; ++i) {
        step.dtypes.push_back(serial::Codec<Dtype>::get(r));
      }
      size_t ns = r.count(4);
      if (ns != nd || nd == 0) {
        r.fail("step " + std::to_string(si) + " has " + std::to_string(nd) + " dtypes and " +
               std::to_string(ns) + " shapes");
      }
      for (size_t i = 0; i < ns; ++i) {
        step.shapes.push_back(read_shape(r));
      }
      uint32_t first = r.u32();
      if (first < num_inputs || first > p.num_values || nd > p.num_values - first) {
        r.fail("step " + std::to_string(si) + " writes values outside the value range");
      }
      step.first_output = static_cast<int>(first);
      // The parameters must fit the inputs, and the recorded outputs must be what the
      // primitive computes from them.
      try {
        check_step(*step.primitive, ins, step.shapes, step.dtypes,
                   [&](const std::string& why) { throw std::invalid_argument(why); });
      } catch (const std::exception& e) {
        r.fail("step " + std::to_string(si) + " (" + name + ") is invalid: " + e.what());
      }
      std::vector<Shape> inferred;
      bool inferable = true;
      try {
        inferred = step.primitive->output_shapes(ins);
      } catch (const std::exception& e) {
        std::string what = e.what();
        // Primitives without shape inference, and reshapes outside shapeless traces (their
        // shape is fixed; check_step checked the element count).
        if (what.find("cannot infer output shapes") == std::string::npos &&
            what.find("was not traced shapelessly") == std::string::npos) {
          r.fail("step " + std::to_string(si) + " (" + name +
                 ") does not apply to its inputs: " + what);
        }
        inferable = false;
      }
      if (inferable && !t.shapeless && inferred != step.shapes) {
        r.fail("step " + std::to_string(si) + " (" + name +
               ") records output shapes that differ from what it computes");
      }
      for (size_t k = 0; k < nd; ++k) {
        define(first + k, step.shapes[k], step.dtypes[k]);
      }
      p.steps.push_back(std::move(step));
    }
    if (num_defined != p.num_values) {
      r.fail("the trace declares " + std::to_string(p.num_values) + " values and defines " +
             std::to_string(num_defined));
    }
    size_t no = r.count(4);
    if (no == 0) {
      r.fail("a trace has no outputs");
    }
    for (size_t i = 0; i < no; ++i) {
      uint32_t v = read_index(r, p.num_values, "output value");
      if (!defined[v]) {
        r.fail("output value " + std::to_string(v) + " is never defined");
      }
      p.outputs.push_back(static_cast<int>(v));
    }
    trace_constants.push_back(std::move(consts));
    result->traces.push_back(std::move(t));
  }
  if (r.remaining() != 0) {
    r.fail(std::to_string(r.remaining()) + " trailing header bytes");
  }

  // Everything is checked: read the constants straight into their buffers.
  std::vector<array> constants;
  for (auto& c : infos) {
    array a(allocator::malloc(c.bytes), c.shape, c.dtype);
    reader->read(a.data<char>(), c.bytes, data_start + c.offset);
    if (c.dtype == bool_) {
      io::detail::normalize_bool(a.data<char>(), c.bytes);
    }
    constants.push_back(std::move(a));
  }
  for (size_t ti = 0; ti < result->traces.size(); ++ti) {
    for (auto& [v, c] : trace_constants[ti]) {
      result->traces[ti].program.constants.emplace_back(static_cast<int>(v), constants[c]);
    }
    guard_layouts(result->traces[ti]);
    if (result->traces[ti].chained) {
      chain_steps(result->traces[ti]);
    }
  }
  return result;
}

// Depends nodes make eval run the steps in the order they are stored (the memory plan's).
void chain_steps(ExportedTrace& t) {
  std::vector<int> order(t.program.steps.size());
  std::iota(order.begin(), order.end(), 0);
  t.program = chain_in_order(t.program, order, ValueTypes(t.program, t.shapes, t.dtypes));
}

// Kernels that read some inputs as row-contiguous (the ops make them so) get them through a
// Copy, a view when they already are: a crafted file cannot hand them a strided view.
void guard_layouts(ExportedTrace& t) {
  Stream stream = default_stream(default_device());
  Program& p = t.program;
  ValueTypes types(p, t.shapes, t.dtypes);
  std::vector<ProgramStep> steps;
  for (auto& step : p.steps) {
    for (size_t i = 1; needs_row_contiguous_inputs(*step.primitive) && i < step.inputs.size();
         ++i) {
      const int in = step.inputs[i];
      const int v = static_cast<int>(p.num_values++);
      steps.push_back(
          {std::make_shared<Copy>(stream), {in}, {types.shapes[in]}, {types.dtypes[in]}, v});
      step.inputs[i] = v;
    }
    steps.push_back(std::move(step));
  }
  p.steps = std::move(steps);
}

}  // namespace detail

// ---- public API ------------------------------------------------------------------------

FunctionExporter::FunctionExporter(std::string file, ExportFn fun, ExportOptions options)
    : file_(std::move(file)), fun_(std::move(fun)), options_(std::move(options)) {}

FunctionExporter::~FunctionExporter() {
  try {
    close();
  } catch (...) {
  }
}

void FunctionExporter::operator()(const Args& args, const Kwargs& kwargs) {
  if (closed_) {
    throw std::invalid_argument("[FunctionExporter] The exporter is closed.");
  }
  auto t = std::make_shared<detail::ExportedTrace>(
      detail::trace_program(fun_, args, kwargs, options_.shapeless));
  for (auto& other : traces_) {
    if (other->num_args == t->num_args && other->keyword_names == t->keyword_names &&
        other->dtypes == t->dtypes && (options_.shapeless ? true : other->shapes == t->shapes)) {
      bool same_ranks = true;
      for (size_t i = 0; i < t->shapes.size(); ++i) {
        same_ranks &= t->shapes[i].size() == other->shapes[i].size();
      }
      if (same_ranks) {
        throw std::invalid_argument(
            "[FunctionExporter] A trace with the same input signature was already exported.");
      }
    }
  }
  if (options_.optimize_memory) {
    detail::optimize_memory(*t);
  }
  traces_.push_back(std::move(t));
}

void FunctionExporter::close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  if (traces_.empty()) {
    return;
  }
  detail::write_export_file(file_, options_.metadata, traces_);
}

void export_function(const std::string& file, const ExportFn& fun, const Args& args,
                     const Kwargs& kwargs, ExportOptions options) {
  FunctionExporter exporter(file, fun, std::move(options));
  exporter(args, kwargs);
  exporter.close();
}

const std::string& ImportedFunction::metadata() const { return file_->metadata; }

std::vector<array> ImportedFunction::operator()(const Args& args, const Kwargs& kwargs) const {
  std::vector<array> inputs = args;
  std::vector<std::string> names;
  for (auto& [name, a] : kwargs) {
    names.push_back(name);
    inputs.push_back(a);
  }
  for (auto& t : file_->traces) {
    if (t.num_args != args.size() || t.keyword_names != names) {
      continue;
    }
    bool match = true;
    for (size_t i = 0; i < inputs.size() && match; ++i) {
      match = inputs[i].dtype() == t.dtypes[i] &&
              (t.shapeless ? static_cast<size_t>(inputs[i].ndim()) == t.shapes[i].size()
                           : inputs[i].shape() == t.shapes[i]);
    }
    if (match) {
      return detail::replay(t.program, inputs, t.shapeless);
    }
  }
  std::vector<Dtype> dtypes;
  std::vector<Shape> shapes;
  for (auto& a : inputs) {
    dtypes.push_back(a.dtype());
    shapes.push_back(a.shape());
  }
  std::string expected;
  for (auto& t : file_->traces) {
    expected += "\n  " + detail::signature_text(t.dtypes, t.shapes, t.num_args, t.keyword_names) +
                (t.shapeless ? " (shapeless)" : "");
  }
  throw std::invalid_argument("[import_function] No exported trace matches the inputs " +
                              detail::signature_text(dtypes, shapes, args.size(), names) +
                              "; the file has:" + expected);
}

ImportedFunction import_function(const std::string& file) {
  return ImportedFunction(detail::read_export_file(file));
}

ExportedGraph trace_for_export(const ExportFn& fun, const Args& args, const Kwargs& kwargs,
                               bool shapeless) {
  auto t = detail::trace_program(fun, args, kwargs, shapeless);
  ExportedGraph g;
  for (size_t i = 0; i < t.program.num_inputs; ++i) {
    g.inputs.push_back(static_cast<int>(i));
  }
  g.keyword_names = t.keyword_names;
  g.constants = t.program.constants;
  for (auto& step : t.program.steps) {
    ExportedNode n;
    serial::StateWriter w;
    step.primitive->write_state(w);
    serial::StateReader r(w.bytes(), "");
    n.primitive = r.str();
    n.state = w.bytes().substr(r.position());
    n.inputs = step.inputs;
    for (size_t k = 0; k < step.shapes.size(); ++k) {
      n.outputs.push_back(step.first_output + static_cast<int>(k));
    }
    n.output_shapes = step.shapes;
    n.output_dtypes = step.dtypes;
    g.nodes.push_back(std::move(n));
  }
  g.outputs = t.program.outputs;
  return g;
}

}  // namespace mlx::core
