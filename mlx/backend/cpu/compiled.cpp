// The CPU kernel of a fused region: a blocked interpreter. The output is walked in blocks of
// kBlock elements (row-major); per block every op runs over the block with the same scalar
// functors (and float32 SIMD kernels) as the unfused kernels, its operands read straight from
// dense inputs or from block-sized scratch that stays in cache. Outputs are written once and
// intermediates never reach memory. A value whose operands are all broadcast scalars is
// computed once per block. (A generated-C++ backend was measured against this one:
// benchmarks/bench_compile.py prints both.)
#include "mlx/primitives/compiled.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/elementwise_types.h"
#include "mlx/backend/common/layout.h"
#include "mlx/backend/cpu/compiled_jit.h"
#include "mlx/backend/cpu/elementwise_bulk.h"
#include "mlx/backend/cpu/elementwise_functors.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/reduction.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cpu;

constexpr int64_t kBlock = 1024;

using UnaryFn = void (*)(const void* in, void* out, int64_t n);
// `as` / `bs`: the operand is one broadcast scalar.
using BinaryFn = void (*)(const void* a, bool as, const void* b, bool bs, void* out, int64_t n);
using SelectFn = void (*)(const void* c, bool cs, const void* x, bool xs, const void* y, bool ys,
                          void* out, int64_t n);
using PowerIntFn = void (*)(const void* a, int k, void* out, int64_t n);

template <typename In, typename Out, typename Op>
void unary_kernel(const void* in, void* out, int64_t n) {
  const In* s = static_cast<const In*>(in);
  Out* d = static_cast<Out*>(out);
  Op op;
  for (int64_t i = 0; i < n; ++i) {
    d[i] = op(s[i]);
  }
}

template <typename T, void (*F)(const T*, T*, int64_t)>
void bulk_unary_kernel(const void* in, void* out, int64_t n) {
  F(static_cast<const T*>(in), static_cast<T*>(out), n);
}

template <typename T, void (*F)(const T*, bool, const T*, bool, T*, int64_t)>
void bulk_binary_kernel(const void* a, bool as, const void* b, bool bs, void* out, int64_t n) {
  F(static_cast<const T*>(a), as, static_cast<const T*>(b), bs, static_cast<T*>(out), n);
}

template <typename T, typename Op>
void binary_kernel(const void* a, bool as, const void* b, bool bs, void* out, int64_t n) {
  using Out = decltype(Op{}(T{}, T{}));
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  Out* d = static_cast<Out*>(out);
  Op op;
  if (as && bs) {
    d[0] = op(x[0], y[0]);
  } else if (as) {
    T s = x[0];
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(s, y[i]);
  } else if (bs) {
    T s = y[0];
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(x[i], s);
  } else {
    for (int64_t i = 0; i < n; ++i)
      d[i] = op(x[i], y[i]);
  }
}

template <typename T>
void power_int_kernel(const void* a, int k, void* out, int64_t n) {
  const T* x = static_cast<const T*>(a);
  T* d = static_cast<T*>(out);
  fn::PowerByInteger op{k};
  for (int64_t i = 0; i < n; ++i)
    d[i] = op(x[i]);
}

template <typename T>
void select_kernel(const void* c, bool cs, const void* x, bool xs, const void* y, bool ys,
                   void* out, int64_t n) {
  const bool* pc = static_cast<const bool*>(c);
  const T* px = static_cast<const T*>(x);
  const T* py = static_cast<const T*>(y);
  T* d = static_cast<T*>(out);
  const int64_t sc = !cs, sx = !xs, sy = !ys;
  for (int64_t i = 0; i < n; ++i)
    d[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
}

// An op with its kernels chosen for its dtypes.
struct Resolved {
  FusedOp::Kind kind;
  UnaryFn vec = nullptr;     // unary over a dense block
  UnaryFn scalar = nullptr;  // unary over one broadcast scalar (the functor, as unfused)
  BinaryFn binary = nullptr;
  PowerIntFn power_int = nullptr;  // Power by a scalar small integer (floating bases)
  SelectFn select = nullptr;
  Dtype from = float32, to = float32;  // cast; `from` is also a binary op's operand dtype
  bool is_power = false;
};

template <typename Op, TypeClass kClass>
void pick_same_type(Resolved& r, Dtype dt, const char* name) {
  r.scalar = dispatch_class<kClass>(
      dt, name, [&]<typename T>() -> UnaryFn { return &unary_kernel<T, T, Op>; });
  r.vec = r.scalar;
  if constexpr (has_bulk_kernel_v<Op>) {
    // As the unfused kernel does (unary.cpp), so that fused regions stay bit-identical to it.
    dispatch_bulk(
        dt, [&]<typename T>() { r.vec = &bulk_unary_kernel<T, bulk_for<T, bulk_kernel<Op>()>()>; });
  }
}

template <typename Op, TypeClass kClass>
void pick_binary_op(Resolved& r, Dtype dt, const char* name) {
  r.binary = dispatch_class<kClass>(
      dt, name, [&]<typename T>() -> BinaryFn { return &binary_kernel<T, Op>; });
  if constexpr (has_binary_bulk_kernel_v<Op>) {
    // As the unfused kernel does (binary.cpp).
    dispatch_bulk(dt, [&]<typename T>() {
      r.binary = &bulk_binary_kernel<T, bulk_for<T, binary_bulk_kernel<Op>()>()>;
    });
  }
}

template <typename Op>
UnaryFn pick_predicate(Dtype dt, const char* name) {
  return dispatch_all(dt, name,
                      [&]<typename T>() -> UnaryFn { return &unary_kernel<T, bool, Op>; });
}

void pick_unary(Resolved& r, UnaryOp op, Dtype dt) {
  const char* n = unary_op_name(op);
  switch (op) {
#define SAME(OP, CLASS)                                 \
  case UnaryOp::OP:                                     \
    pick_same_type<fn::OP, TypeClass::CLASS>(r, dt, n); \
    return;
    MLX_UNARY_SAME_TYPE_OPS(SAME)
#undef SAME
    case UnaryOp::Real:
      r.scalar = &unary_kernel<complex64_t, float, fn::Real>;
      break;
    case UnaryOp::Imag:
      r.scalar = &unary_kernel<complex64_t, float, fn::Imag>;
      break;
#define PREDICATE(OP)                         \
  case UnaryOp::OP:                           \
    r.scalar = pick_predicate<fn::OP>(dt, n); \
    break;
      PREDICATE(LogicalNot)
      PREDICATE(IsNaN)
      PREDICATE(IsInf)
      PREDICATE(IsPosInf)
      PREDICATE(IsNegInf)
      PREDICATE(IsFinite)
#undef PREDICATE
  }
  r.vec = r.scalar;
}

void pick_binary(Resolved& r, BinaryOp op, Dtype dt) {
  const char* n = binary_op_name(op);
  switch (op) {
#define CASE(OP, CLASS)                                 \
  case BinaryOp::OP:                                    \
    pick_binary_op<fn::OP, TypeClass::CLASS>(r, dt, n); \
    break;
    MLX_BINARY_OP_TYPES(CASE)
#undef CASE
  }
  if (op == BinaryOp::Power && is_floating_point(dt)) {
    r.is_power = true;
    r.power_int =
        dispatch_float(dt, n, [&]<typename T>() -> PowerIntFn { return &power_int_kernel<T>; });
  }
}

std::vector<Resolved> resolve(const Compiled& c) {
  std::vector<Resolved> out;
  for (auto& op : c.ops()) {
    Resolved r;
    r.kind = op.kind;
    Dtype in = c.value_dtype(op.args[0]);
    switch (op.kind) {
      case FusedOp::Kind::unary:
        pick_unary(r, static_cast<UnaryOp>(op.code), in);
        break;
      case FusedOp::Kind::binary:
        r.from = in;
        pick_binary(r, static_cast<BinaryOp>(op.code), in);
        break;
      case FusedOp::Kind::select:
        r.select = dispatch_by_size(size_of(op.dtype), "where",
                                    [&]<typename T>() -> SelectFn { return &select_kernel<T>; });
        break;
      case FusedOp::Kind::cast:
        r.from = in;
        r.to = op.dtype;
        break;
    }
    out.push_back(r);
  }
  return out;
}

// How a block of an input is read.
struct InputAccess {
  enum class Mode { scalar, dense, gather } mode;
  const char* base;
  int64_t itemsize;
  Layout<2> layout;  // gather: the input's strides (broadcast to the output) and the output's
};

InputAccess access_of(const array& in, const Shape& shape) {
  InputAccess a;
  a.base = in.data<char>();
  a.itemsize = static_cast<int64_t>(in.itemsize());
  if (in.data_size() == 1) {
    a.mode = InputAccess::Mode::scalar;
  } else if (in.shape() == shape && in.flags().row_contiguous && in.data_size() == in.size()) {
    a.mode = InputAccess::Mode::dense;
  } else {
    a.mode = InputAccess::Mode::gather;
    Strides s(shape.size(), 0);
    const int pad = static_cast<int>(shape.size()) - in.ndim();
    for (int d = 0; d < in.ndim(); ++d) {
      s[pad + d] = in.shape(d) == 1 ? 0 : in.strides(d);
    }
    a.layout = collapse_dims<2>(shape, {s, row_major_strides(shape)});
  }
  return a;
}

// Copies elements [start, start + n) (row-major over the output) of a strided input.
template <typename T>
void gather_block(const InputAccess& a, int64_t start, int64_t n, void* dst_) {
  const auto& shape = a.layout.shape;
  const auto& st = a.layout.strides[0];
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> idx(nd, 0);
  int64_t rem = start, off = 0;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    off += idx[d] * st[d];
  }
  const T* src = reinterpret_cast<const T*>(a.base);
  T* dst = static_cast<T*>(dst_);
  const int64_t inner = st[nd - 1];
  int64_t done = 0;
  while (done < n) {
    int64_t len = std::min(n - done, shape[nd - 1] - idx[nd - 1]);
    const T* s = src + off;
    if (inner == 0) {
      std::fill(dst + done, dst + done + len, s[0]);
    } else {
      for (int64_t i = 0; i < len; ++i)
        dst[done + i] = s[i * inner];
    }
    done += len;
    off += len * inner;
    idx[nd - 1] += len;
    for (int d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      off -= idx[d] * st[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += st[d - 1];
    }
  }
}

void fill_block(const void* value, int64_t itemsize, void* dst, int64_t n) {
  dispatch_by_size(static_cast<int>(itemsize), "Compiled", [&]<typename T>() {
    T v;
    std::memcpy(&v, value, sizeof(T));
    std::fill(static_cast<T*>(dst), static_cast<T*>(dst) + n, v);
  });
}

// Everything a block needs, fixed for one evaluation.
struct Plan {
  std::vector<InputAccess> inputs;
  std::vector<Resolved> ops;
  std::vector<int64_t> itemsize;  // per value
  std::vector<char*> out_base;    // per value: the output it is written to, or nullptr
  std::vector<int> slot;          // per op result that is not an output: its scratch slot
  int num_slots = 0;
  std::vector<int> gather_slot;  // per input: its scratch slot when gathered, else -1
  // Bytes between slots: a block of the widest element plus a cache line, so that the slots
  // do not all map to the same cache sets (a multiple of 4 KB would).
  int64_t slot_bytes = 0;
};

// Uninitialized, cache-line aligned scratch of a plan's slots (one per thread task).
class Scratch {
 public:
  explicit Scratch(const Plan& plan)
      : bytes_(plan.slot_bytes), data_(new char[plan.slot_bytes * plan.num_slots + 64]) {}
  char* slot(int k) const {
    auto base = (reinterpret_cast<uintptr_t>(data_.get()) + 63) & ~uintptr_t(63);
    return reinterpret_cast<char*>(base) + static_cast<size_t>(k) * bytes_;
  }

 private:
  int64_t bytes_;
  std::unique_ptr<char[]> data_;
};

// Scratch slots by liveness: an op's result takes a slot freed by a value whose last reader
// ran before it (never one of its own operands: casts change the element width).
void assign_slots(const Compiled& c, Plan& plan) {
  const int nin = c.num_inputs();
  const int nv = nin + static_cast<int>(c.ops().size());
  std::vector<int> last(nv, -1);
  for (size_t i = 0; i < c.ops().size(); ++i) {
    for (int a = 0; a < c.ops()[i].num_args(); ++a) {
      last[c.ops()[i].args[a]] = static_cast<int>(i);
    }
  }
  if (c.has_reduction()) {
    last[c.reduction().value] = nv;  // read after the ops, by the reduction
  }
  plan.slot.assign(nv, -1);
  std::vector<int> free_slots;
  for (size_t i = 0; i < c.ops().size(); ++i) {
    int v = nin + static_cast<int>(i);
    if (!plan.out_base[v]) {
      if (free_slots.empty()) {
        plan.slot[v] = plan.num_slots++;
      } else {
        plan.slot[v] = free_slots.back();
        free_slots.pop_back();
      }
    }
    for (int a = 0; a < c.ops()[i].num_args(); ++a) {
      int u = c.ops()[i].args[a];
      if (last[u] == static_cast<int>(i) && plan.slot[u] >= 0 &&
          std::find(free_slots.begin(), free_slots.end(), plan.slot[u]) == free_slots.end()) {
        free_slots.push_back(plan.slot[u]);  // once, though an op may read it twice
      }
    }
  }
}

// Gathered inputs get slots after the ops' (the kernels read them while the ops run).
void assign_gather_slots(const Compiled& c, Plan& plan) {
  int64_t widest = 1;
  for (int64_t size : plan.itemsize) {
    widest = std::max(widest, size);
  }
  plan.slot_bytes = (kBlock * widest + 63) / 64 * 64 + 64;
  plan.gather_slot.assign(c.num_inputs(), -1);
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (plan.inputs[i].mode == InputAccess::Mode::gather) {
      plan.gather_slot[i] = plan.num_slots++;
    }
  }
}

// Points in[i] at input i's block [start, start + n): in place when dense, gathered into its
// slot when strided (scalars were set once).
void read_inputs(const Plan& plan, const Scratch& scratch, int64_t start, int64_t n, int64_t total,
                 std::vector<const void*>& in) {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const InputAccess& a = plan.inputs[i];
    if (a.mode == InputAccess::Mode::dense) {
      in[i] = a.base + start * a.itemsize;
      // The next block, ahead of the ops: they read one input a page at a time, which the
      // hardware prefetchers do not follow from one page to the next.
      const int64_t end = std::min(start + 2 * n, total) * a.itemsize;
      for (int64_t off = (start + n) * a.itemsize; off < end; off += 64) {
        __builtin_prefetch(a.base + off);
      }
    } else if (a.mode == InputAccess::Mode::gather) {
      char* dst = scratch.slot(plan.gather_slot[i]);
      dispatch_by_size(static_cast<int>(a.itemsize), "Compiled",
                       [&]<typename T>() { gather_block<T>(a, start, n, dst); });
      in[i] = dst;
    } else {
      in[i] = a.base;
    }
  }
}

void run_op(const Resolved& r, const FusedOp& op, const std::vector<const void*>& ptr,
            const std::vector<char>& is_scalar, void* dst, int64_t n) {
  const void* a = ptr[op.args[0]];
  bool as = is_scalar[op.args[0]];
  switch (r.kind) {
    case FusedOp::Kind::unary:
      (as ? r.scalar : r.vec)(a, dst, as ? 1 : n);
      return;
    case FusedOp::Kind::cast:
      convert_elements(a, r.from, dst, r.to, as ? 1 : n);
      return;
    case FusedOp::Kind::binary: {
      const void* b = ptr[op.args[1]];
      bool bs = is_scalar[op.args[1]];
      if (r.is_power && bs && !as) {
        double k;
        convert_elements(b, r.from, &k, float64, 1);
        int e;
        if (fn::small_integer_exponent(k, e)) {
          r.power_int(a, e, dst, n);
          return;
        }
      }
      r.binary(a, as, b, bs, dst, (as && bs) ? 1 : n);
      return;
    }
    case FusedOp::Kind::select: {
      int c = op.args[0], x = op.args[1], y = op.args[2];
      bool all = is_scalar[c] && is_scalar[x] && is_scalar[y];
      r.select(ptr[c], is_scalar[c], ptr[x], is_scalar[x], ptr[y], is_scalar[y], dst, all ? 1 : n);
      return;
    }
  }
}

// Computes blocks of a region on one thread: through a generated kernel when there is one,
// else op by op over scratch.
class BlockRunner {
 public:
  BlockRunner(const Compiled& c, const Plan& plan, BlockKernel kernel)
      : c_(c), plan_(plan), kernel_(kernel), scratch_(plan) {
    const int nin = c.num_inputs();
    const int nv = nin + static_cast<int>(c.ops().size());
    scalars_.resize(static_cast<size_t>(nv) * 2);  // 16 bytes per value
    ptr_.resize(nv);
    is_scalar_.assign(nv, 0);
    for (int i = 0; i < nin; ++i) {
      is_scalar_[i] = plan.inputs[i].mode == InputAccess::Mode::scalar;
    }
    for (int o : c.output_values()) {
      kernel_outputs_.push_back(o);
    }
    if (c.has_reduction() && !plan.out_base[c.reduction().value]) {
      kernel_outputs_.push_back(c.reduction().value);
    }
    out_.resize(kernel_outputs_.size());
  }

  // Computes elements [start, start + n) (n <= kBlock) and returns the block of the value
  // the reduction reads (nullptr without one).
  const void* run(int64_t start, int64_t n, int64_t total) {
    read_inputs(plan_, scratch_, start, n, total, ptr_);
    if (kernel_) {
      for (size_t j = 0; j < kernel_outputs_.size(); ++j) {
        int v = kernel_outputs_[j];
        out_[j] = plan_.out_base[v] ? plan_.out_base[v] + start * plan_.itemsize[v]
                                    : scratch_.slot(plan_.slot[v]);
      }
      kernel_(ptr_.data(), out_.data(), n);
      if (!c_.has_reduction()) {
        return nullptr;
      }
      int v = c_.reduction().value;
      return plan_.out_base[v] ? plan_.out_base[v] + start * plan_.itemsize[v]
                               : scratch_.slot(plan_.slot[v]);
    }
    const int nin = c_.num_inputs();
    for (size_t k = 0; k < c_.ops().size(); ++k) {
      const FusedOp& op = c_.ops()[k];
      const int v = nin + static_cast<int>(k);
      bool scalar = true;
      for (int a = 0; a < op.num_args(); ++a) {
        scalar = scalar && is_scalar_[op.args[a]];
      }
      void* dst;
      if (scalar) {
        dst = &scalars_[static_cast<size_t>(v) * 2];
      } else if (plan_.out_base[v]) {
        dst = plan_.out_base[v] + start * plan_.itemsize[v];
      } else {
        dst = scratch_.slot(plan_.slot[v]);
      }
      run_op(plan_.ops[k], op, ptr_, is_scalar_, dst, n);
      ptr_[v] = dst;
      is_scalar_[v] = scalar;
      if (scalar && plan_.out_base[v]) {
        fill_block(dst, plan_.itemsize[v], plan_.out_base[v] + start * plan_.itemsize[v], n);
      }
    }
    if (!c_.has_reduction()) {
      return nullptr;
    }
    int v = c_.reduction().value;
    if (is_scalar_[v] && !plan_.out_base[v]) {
      fill_block(ptr_[v], plan_.itemsize[v], scratch_.slot(plan_.slot[v]), n);
      return scratch_.slot(plan_.slot[v]);
    }
    return is_scalar_[v] ? plan_.out_base[v] + start * plan_.itemsize[v] : ptr_[v];
  }

 private:
  const Compiled& c_;
  const Plan& plan_;
  BlockKernel kernel_;
  Scratch scratch_;
  std::vector<uint64_t> scalars_;
  std::vector<const void*> ptr_;
  std::vector<char> is_scalar_;
  std::vector<int> kernel_outputs_;
  std::vector<void*> out_;
};

// The reduction's accumulator: float32 values, a double sum (more accurate than the unfused
// kernels' float partial sums), NaN-propagating max / min as the functors.
struct Accumulator {
  int type;
  double acc;
  explicit Accumulator(int t)
      : type(t),
        acc(t == Reduce::Sum ? 0.0
                             : (t == Reduce::Max ? -std::numeric_limits<double>::infinity()
                                                 : std::numeric_limits<double>::infinity())) {}
  void add(const float* x, int64_t n) {
    if (type == Reduce::Sum) {
      float part[8] = {};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l)
          part[l] += x[i + l];
      double s = 0;
      for (int l = 0; l < 8; ++l)
        s += part[l];
      for (; i < n; ++i)
        s += x[i];
      acc += s;
    } else {
      for (int64_t i = 0; i < n; ++i)
        combine(x[i]);
    }
  }
  void combine(double v) {
    if (type == Reduce::Sum) {
      acc += v;
    } else if (std::isnan(acc) || std::isnan(v)) {
      acc = std::numeric_limits<double>::quiet_NaN();
    } else {
      acc = type == Reduce::Max ? std::max(acc, v) : std::min(acc, v);
    }
  }
};

// Output k may take over input i's buffer: same bytes per element, dense in the output's
// layout, held by nothing else, and read by no op after the one that writes output k (a
// block is read before it is overwritten).
int donor_for(const Compiled& c, const std::vector<array>& inputs, const array& out, int value,
              std::vector<char>& taken) {
  const int nin = c.num_inputs();
  for (int i = 0; i < nin; ++i) {
    const array& in = inputs[i];
    if (taken[i] || !in.is_donatable() || in.itemsize() != out.itemsize() ||
        in.shape() != out.shape() || !in.flags().row_contiguous) {
      continue;
    }
    bool read_later = false;
    for (size_t k = value - nin + 1; k < c.ops().size() && !read_later; ++k) {
      for (int a = 0; a < c.ops()[k].num_args(); ++a) {
        read_later = read_later || c.ops()[k].args[a] == i;
      }
    }
    bool twice = false;
    for (int j = 0; j < nin; ++j) {
      twice = twice || (j != i && inputs[j].id() == in.id());
    }
    if (!read_later && !twice) {
      taken[i] = 1;
      return i;
    }
  }
  return -1;
}

}  // namespace

void Compiled::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  std::vector<Shape> input_shapes;
  for (auto& in : inputs) {
    input_shapes.push_back(in.shape());
  }
  const Shape shape =
      outputs_.empty() ? broadcast_shapes(input_shapes, "Compiled") : outputs[0].shape();
  const int64_t total = static_cast<int64_t>(shape_size(shape));
  array reduced = has_reduction() ? outputs.back() : array(0.0f);
  if (has_reduction()) {
    reduced.set_data(allocator::malloc(reduced.nbytes()));
    if (total == 0) {
      std::fill(reduced.data<float>(), reduced.data<float>() + reduced.size(),
                static_cast<float>(Accumulator(reduction_.type).acc));
    }
  }
  const int nin = num_inputs();
  const int nv = nin + static_cast<int>(ops_.size());
  Plan plan;
  plan.itemsize.resize(nv);
  for (int v = 0; v < nv; ++v) {
    plan.itemsize[v] = static_cast<int64_t>(size_of(value_dtype(v)));
  }
  plan.out_base.assign(nv, nullptr);
  std::vector<char> taken(nin, 0);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    array& out = outputs[k];
    int donor = total > 0 ? donor_for(*this, inputs, out, outputs_[k], taken) : -1;
    if (donor >= 0) {
      out.copy_shared_buffer(inputs[donor]);
    } else {
      out.set_data(allocator::malloc(out.nbytes()));
    }
    plan.out_base[outputs_[k]] = out.data<char>();
  }
  if (total == 0 || (has_reduction() && reduced.size() == 0)) {
    return;
  }
  for (int i = 0; i < nin; ++i) {
    plan.inputs.push_back(access_of(inputs[i], shape));
  }
  plan.ops = resolve(*this);
  assign_slots(*this, plan);
  assign_gather_slots(*this, plan);
  int64_t bytes_per_elem = 0;
  for (int v = 0; v < nv; ++v) {
    bytes_per_elem += (v < nin && plan.inputs[v].mode == InputAccess::Mode::scalar) ||
                              (v >= nin && !plan.out_base[v])
                          ? 0
                          : plan.itemsize[v];
  }
  std::vector<char> scalars(nin);
  for (int i = 0; i < nin; ++i) {
    scalars[i] = plan.inputs[i].mode == InputAccess::Mode::scalar;
  }
  std::vector<int> kernel_outputs = outputs_;
  if (has_reduction() && !plan.out_base[reduction_.value]) {
    kernel_outputs.push_back(reduction_.value);
  }
  BlockKernel kernel = jit_kernel(*this, scalars, kernel_outputs);
  const int64_t grain =
      std::max<int64_t>(1, kParallelBytes / (kBlock * std::max<int64_t>(bytes_per_elem, 4)));
  if (!has_reduction()) {
    const int64_t blocks = (total + kBlock - 1) / kBlock;
    parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
      BlockRunner runner(*this, plan, kernel);
      for (int64_t b = b0; b < b1; ++b) {
        runner.run(b * kBlock, std::min(kBlock, total - b * kBlock), total);
      }
    });
    return;
  }
  // Rows of the reduced trailing axes, each walked in blocks that stay inside the row; each
  // block's partial result is kept by index, so the order of the combination is fixed.
  int64_t row = 1;
  for (int a : reduction_.axes) {
    row *= shape[a];
  }
  const int64_t rows = total / row;
  const int64_t per_row = (row + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(rows * per_row));
  parallel_for(rows * per_row, grain, [&](int64_t t0, int64_t t1) {
    BlockRunner runner(*this, plan, kernel);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / per_row, off = t % per_row * kBlock;
      const int64_t n = std::min(kBlock, row - off);
      Accumulator acc(reduction_.type);
      acc.add(static_cast<const float*>(runner.run(r * row + off, n, total)), n);
      partial[t] = acc.acc;
    }
  });
  float* dst = reduced.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    Accumulator acc(reduction_.type);
    for (int64_t b = 0; b < per_row; ++b) {
      acc.combine(partial[r * per_row + b]);
    }
    dst[r] = static_cast<float>(acc.acc);
  }
}

}  // namespace mlx::core
