// Checks of an imported step that its primitive's kernel relies on: the op layer guarantees
// them when a graph is built by ops, a file has to be checked. Run before output_shapes (which
// may index shapes or divide by parameters), on inputs that only carry shapes and dtypes.
#include "mlx/export/validate.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "mlx/backend/common/hadamard_matrices.h"
#include "mlx/ops/quantized_params.h"
#include "mlx/primitives/conv.h"
#include "mlx/primitives/creation.h"
#include "mlx/primitives/elementwise.h"
#include "mlx/primitives/fast.h"
#include "mlx/primitives/fft.h"
#include "mlx/primitives/grouped_matmul.h"
#include "mlx/primitives/hadamard.h"
#include "mlx/primitives/indexing.h"
#include "mlx/primitives/linalg.h"
#include "mlx/primitives/linalg_lapack.h"
#include "mlx/primitives/quantized.h"
#include "mlx/primitives/random.h"
#include "mlx/primitives/reduction.h"
#include "mlx/primitives/shape.h"
#include "mlx/primitives/transform.h"
#include "mlx/utils.h"

namespace mlx::core::detail {

namespace {

bool is_half(Dtype t) { return t == float16 || t == bfloat16; }

bool is_one_of(const char* name, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (std::strcmp(name, n) == 0) {
      return true;
    }
  }
  return false;
}

// Equal ranks, and equal dimensions except along `axis`.
bool same_but_axis(const Shape& a, const Shape& b, int axis) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (static_cast<int>(i) != axis && a[i] != b[i]) {
      return false;
    }
  }
  return true;
}

// The view primitives compute their layout from their parameters: check them against the
// input so that a crafted file cannot make a view reach outside its buffer.
void check_view(Primitive& prim, const std::vector<array>& in, const std::vector<Shape>& shapes,
                const StepFail& fail) {
  const Shape& out = shapes[0];
  if (auto* p = dynamic_cast<Broadcast*>(&prim)) {
    auto [target] = p->state();
    const Shape& s = in[0].shape();
    if (target != out || s.size() > out.size()) {
      fail("its shape does not match its output");
    }
    for (size_t i = 0; i < s.size(); ++i) {
      int o = out[out.size() - s.size() + i];
      if (s[i] != 1 && s[i] != o) {
        fail("cannot broadcast " + to_string(s) + " to " + to_string(out));
      }
    }
  } else if (auto* p = dynamic_cast<Slice*>(&prim)) {
    auto [start, stop, strides] = p->state();
    const Shape& s = in[0].shape();
    if (start.size() != s.size() || stop.size() != s.size() || strides.size() != s.size() ||
        out.size() != s.size()) {
      fail("its bounds do not match the input's rank");
    }
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t n = out[i];
      if (strides[i] == 0 || (n > 0 && (start[i] < 0 || start[i] >= s[i] ||
                                        start[i] + (n - 1) * int64_t(strides[i]) < 0 ||
                                        start[i] + (n - 1) * int64_t(strides[i]) >= s[i]))) {
        fail("it reads outside the input of shape " + to_string(s));
      }
    }
  } else if (auto* p = dynamic_cast<AsStrided*>(&prim)) {
    auto [shape, strides, offset] = p->state();
    if (shape != out || strides.size() != shape.size()) {
      fail("its shape and strides do not match its output");
    }
    int64_t lo = static_cast<int64_t>(offset), hi = lo;
    bool empty = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      empty |= shape[i] == 0;
      int64_t reach = (shape[i] - 1) * strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    if (!empty && (lo < 0 || hi >= static_cast<int64_t>(in[0].size()))) {
      fail("it reaches outside the input's " + std::to_string(in[0].size()) + " elements");
    }
  } else if (auto* p = dynamic_cast<Diagonal*>(&prim)) {
    auto [offset, a1, a2] = p->state();
    int nd = static_cast<int>(in[0].ndim());
    if (a1 < 0 || a2 < 0 || a1 >= nd || a2 >= nd || a1 == a2) {
      fail("its axes are out of range");
    }
    int64_t len = offset >= 0
                      ? std::min<int64_t>(in[0].shape(a1), int64_t(in[0].shape(a2)) - offset)
                      : std::min<int64_t>(int64_t(in[0].shape(a1)) + offset, in[0].shape(a2));
    if (out.empty() || out.back() != std::max<int64_t>(len, 0) || out.size() != size_t(nd - 1)) {
      fail("its output shape does not match the diagonal");
    }
    for (int i = 0, j = 0; i < nd; ++i) {
      if (i != a1 && i != a2 && out[j++] != in[0].shape(i)) {
        fail("its output shape does not match its input");
      }
    }
  } else if (auto* p = dynamic_cast<Split*>(&prim)) {
    auto [boundaries, axis] = p->state();
    const Shape& s = in[0].shape();
    if (axis < 0 || static_cast<size_t>(axis) >= s.size() ||
        shapes.size() != boundaries.size() + 1) {
      fail("its axis or number of pieces does not match its input");
    }
    int64_t lo = 0;
    for (size_t i = 0; i < shapes.size(); ++i) {
      int64_t hi = i < boundaries.size() ? boundaries[i] : s[axis];
      if (hi < lo || hi > s[axis] || !same_but_axis(shapes[i], s, axis) ||
          shapes[i][axis] != hi - lo) {
        fail("its pieces do not tile the input of shape " + to_string(s));
      }
      lo = hi;
    }
  } else if (auto* p = dynamic_cast<View*>(&prim)) {
    uint64_t out_bytes = size_of(std::get<0>(p->state()));
    for (int d : out) {
      out_bytes *= d;
    }
    if (out_bytes != in[0].nbytes()) {
      fail("its output does not cover the input's bytes");
    }
  }
}

}  // namespace

// A bucketed optimizer step: per_param groups of n arrays (parameters first, the rest like
// them, one floating dtype), then `scalars` scalars of the accumulation type; outputs
// out_per_param groups of n in the parameters' dtype.
void check_optimizer_step(const std::vector<array>& in, const std::vector<Dtype>& dtypes, size_t n,
                          size_t per_param, size_t scalars, size_t out_per_param,
                          const StepFail& fail) {
  auto need = [&](bool ok, const char* why) {
    if (!ok) {
      fail(why);
    }
  };
  need(in.size() > scalars && n > 0 && in.size() == per_param * n + scalars &&
           is_floating_point(in[0].dtype()) && dtypes.size() == out_per_param * n,
       "it does not take its arrays per parameter and its scalars, a float first");
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 1; k < per_param; ++k) {
      need(in[k * n + i].shape() == in[i].shape() && in[k * n + i].dtype() == in[0].dtype(),
           "a gradient or state array does not match its parameter");
    }
    need(in[i].dtype() == in[0].dtype(), "its parameters do not share a dtype");
  }
  for (size_t i = per_param * n; i < in.size(); ++i) {
    need(in[i].size() == 1 && in[i].dtype() == fast::accumulation_dtype(in[0].dtype()),
         "its scalars are not scalars of its accumulation type");
  }
  for (Dtype d : dtypes) {
    need(d == in[0].dtype(), "its output dtype is not what it computes");
  }
}

void check_step(Primitive& prim, const std::vector<array>& in, const std::vector<Shape>& shapes,
                const std::vector<Dtype>& dtypes, const StepFail& fail) {
  auto need = [&](bool ok, const std::string& why) {
    if (!ok) {
      fail(why);
    }
  };
  auto axis_ok = [&](int axis, size_t rank) {
    return axis >= 0 && static_cast<size_t>(axis) < rank;
  };
  auto axes_ok = [&](const std::vector<int>& axes, size_t rank) {
    std::set<int> seen;
    for (int a : axes) {
      if (!axis_ok(a, rank) || !seen.insert(a).second) {
        return false;
      }
    }
    return true;
  };
  auto same_inputs = [&](size_t from, size_t to) {
    for (size_t i = from; i < to && i < in.size(); ++i) {
      need(in[i].shape() == in[from].shape() && in[i].dtype() == in[from].dtype(),
           "its inputs must share one shape and dtype");
    }
  };
  need(!in.empty() || dynamic_cast<Arange*>(&prim), "it has no inputs");
  if (!in.empty()) {
    check_view(prim, in, shapes, fail);
  }
  size_t rank0 = in.empty() ? 0 : in[0].shape().size();
  const char* name = prim.name();

  // Layout changes and the ops that keep their input's dtype.
  if (!in.empty() &&
      (dynamic_cast<Copy*>(&prim) || dynamic_cast<Broadcast*>(&prim) ||
       dynamic_cast<Reshape*>(&prim) || dynamic_cast<Transpose*>(&prim) ||
       dynamic_cast<Slice*>(&prim) || dynamic_cast<Split*>(&prim) ||
       dynamic_cast<AsStrided*>(&prim) || dynamic_cast<Diagonal*>(&prim) ||
       dynamic_cast<SliceUpdate*>(&prim) || dynamic_cast<Full*>(&prim) ||
       dynamic_cast<StopGradient*>(&prim) || dynamic_cast<DynamicBroadcast*>(&prim) ||
       dynamic_cast<DynamicUnbroadcast*>(&prim) || dynamic_cast<SqueezeAxes*>(&prim) ||
       dynamic_cast<ExpandAxes*>(&prim) || dynamic_cast<Softmax*>(&prim) ||
       dynamic_cast<LogSumExp*>(&prim) || dynamic_cast<Gather*>(&prim) ||
       dynamic_cast<GatherAxis*>(&prim) || dynamic_cast<Scatter*>(&prim) ||
       dynamic_cast<ScatterAxis*>(&prim))) {
    need(dtypes[0] == in[0].dtype(), "its output dtype differs from its input's");
  }
  if (dynamic_cast<Split*>(&prim)) {
    need(std::all_of(dtypes.begin(), dtypes.end(), [&](Dtype t) { return t == in[0].dtype(); }),
         "a piece's dtype differs from its input's");
  }
  if (dynamic_cast<DynamicUnbroadcast*>(&prim)) {
    need(in.size() == 2, "it takes an array and one lending its shape");
  }
  if (auto* p = dynamic_cast<SortAlongAxis*>(&prim)) {
    auto kind = std::get<0>(p->state()).value;
    bool indices = kind == SortKind::ArgSort || kind == SortKind::ArgPartition;
    need(dtypes[0] == (indices ? uint32 : in[0].dtype()),
         "its output dtype is not what it computes");
  }
  if (auto* p = dynamic_cast<Depends*>(&prim)) {
    size_t n = std::get<0>(p->state());
    need(n >= 1 && n <= in.size() && dtypes.size() == n, "it passes more arrays than it takes");
    for (size_t k = 0; k < n; ++k) {
      need(dtypes[k] == in[k].dtype(), "its outputs differ from the arrays it passes");
    }
  }
  if (dynamic_cast<Scan*>(&prim)) {
    need(dtypes[0] == in[0].dtype() || (in[0].dtype() == bool_ && dtypes[0] == int32),
         "its output dtype is not what it computes");
  }
  if (dynamic_cast<ArgReduce*>(&prim)) {
    need(dtypes[0] == uint32, "its output dtype is not uint32");
  }
  if (auto* p = dynamic_cast<AsType*>(&prim)) {
    need(dtypes[0] == std::get<0>(p->state()), "its output dtype differs from its target");
  }
  if (auto* p = dynamic_cast<NumberOfElements*>(&prim)) {
    need(dtypes[0] == std::get<2>(p->state()), "its output dtype differs from its target");
  }
  if (auto* p = dynamic_cast<View*>(&prim)) {
    need(dtypes[0] == std::get<0>(p->state()), "its output dtype differs from its target");
  }

  if (auto* p = dynamic_cast<fast::RMSNorm*>(&prim)) {
    auto [eps, has_weight] = p->state();
    need(in.size() == 1u + has_weight && rank0 >= 1, "it takes x and an optional weight");
    need(!has_weight || (in[1].size() == static_cast<size_t>(in[0].shape(-1)) &&
                         in[1].dtype() == in[0].dtype()),
         "its weight does not match the last axis");
  } else if (auto* p = dynamic_cast<fast::LayerNorm*>(&prim)) {
    auto [eps, has_weight, has_bias] = p->state();
    need(in.size() == 1u + has_weight + has_bias && rank0 >= 1,
         "it takes x and an optional weight and bias");
    for (size_t i = 1; i < in.size(); ++i) {
      need(in[i].size() == static_cast<size_t>(in[0].shape(-1)) && in[i].dtype() == in[0].dtype(),
           "its weight or bias does not match the last axis");
    }
  } else if (dynamic_cast<fast::RMSNormVJP*>(&prim) || dynamic_cast<fast::LayerNormVJP*>(&prim)) {
    bool has_weight = dynamic_cast<fast::RMSNormVJP*>(&prim)
                          ? std::get<1>(dynamic_cast<fast::RMSNormVJP*>(&prim)->state())
                          : std::get<1>(dynamic_cast<fast::LayerNormVJP*>(&prim)->state());
    need(in.size() == 2u + has_weight && rank0 >= 1 && in.back().shape() == in[0].shape() &&
             (!has_weight || in[1].size() == static_cast<size_t>(in[0].shape(-1))),
         "its inputs do not match x");
  } else if (dynamic_cast<fast::CrossEntropy*>(&prim) ||
             dynamic_cast<fast::CrossEntropyVJP*>(&prim)) {
    bool vjp = dynamic_cast<fast::CrossEntropyVJP*>(&prim) != nullptr;
    need(in.size() == (vjp ? 4u : 2u) && rank0 >= 1 && in[0].shape(-1) > 0 &&
             is_floating_point(in[0].dtype()) && issubdtype(in[1].dtype(), DtypeCategory::integer),
         "it takes floating-point logits and integer targets");
    Shape rows(in[0].shape().begin(), in[0].shape().end() - 1);
    for (size_t i = 1; i < in.size(); ++i) {
      need(in[i].shape() == rows, "its targets and row statistics are not one per row");
    }
    need(vjp ? dtypes[0] == in[0].dtype() : dtypes[0] == float32,
         "its output dtype is not what it computes");
  } else if (dynamic_cast<fast::AdamUpdate*>(&prim)) {
    check_optimizer_step(in, dtypes, fast::AdamUpdate::parameters(in), 4, 3, 3, fail);
  } else if (auto* p = dynamic_cast<fast::SgdUpdate*>(&prim)) {
    check_optimizer_step(in, dtypes, p->parameters(in), p->inputs_per_parameter(), 1,
                         p->outputs_per_parameter(), fail);
  } else if (auto* p = dynamic_cast<fast::RoPE*>(&prim)) {
    auto [dims, traditional, base, scale, has_freqs, inverse] = p->state();
    need(in.size() == 2u + has_freqs && rank0 >= 1 && dims > 0 && dims % 2 == 0 &&
             dims <= in[0].shape(-1) && in[1].dtype() == int32 && in[1].shape().size() <= 1,
         "its dims or offset do not fit x");
    need(!has_freqs || (in[2].size() == static_cast<size_t>(dims / 2) && in[2].dtype() == float32),
         "its frequencies do not fit its dims");
  } else if (dynamic_cast<fast::ScaledDotProductAttention*>(&prim) ||
             dynamic_cast<fast::ScaledDotProductAttentionVJP*>(&prim)) {
    auto* backward = dynamic_cast<fast::ScaledDotProductAttentionVJP*>(&prim);
    bool vjp = backward != nullptr;
    // The last field: the forward outputs lse / the backward reads it as its last input.
    auto [scale, causal, has_mask, has_sinks, lse_field] =
        vjp ? backward->state() : dynamic_cast<fast::ScaledDotProductAttention*>(&prim)->state();
    bool lse = lse_field;
    size_t n = 3u + has_mask + has_sinks + (vjp ? 2u + lse : 0u);
    need(in.size() == n && rank0 == 4 && in[1].shape().size() == 4 && in[2].shape().size() == 4,
         "it takes (B, N, T, D) queries, keys and values");
    const Shape &q = in[0].shape(), &k = in[1].shape(), &v = in[2].shape();
    need(q[0] == k[0] && k[0] == v[0] && k[1] == v[1] && k[2] == v[2] && q[3] == k[3] && k[1] > 0 &&
             q[1] % k[1] == 0,
         "its queries, keys and values do not fit together");
    for (size_t i = 1; i < 3; ++i) {
      need(in[i].dtype() == in[0].dtype(), "its operands differ in dtype");
    }
    if (has_mask) {
      need(in[3].shape() == Shape({q[0], q[1], q[2], k[2]}), "its mask is not (B, N, Tq, Tkv)");
    }
    if (has_sinks) {
      need(in[3 + has_mask].size() == static_cast<size_t>(q[1]), "its sinks are not one per head");
    }
    const Shape rows = {q[0], q[1], q[2]};
    if (vjp) {
      Shape out = q;
      out[3] = v[3];
      size_t o = 3u + has_mask + has_sinks;
      need(in[o].shape() == out && in[o + 1].shape() == out,
           "its output and cotangent do not have the output's shape");
      need(!lse || (in.back().shape() == rows && in.back().dtype() == float32),
           "its lse is not float32 (B, N, Tq)");
      need(dtypes.size() == 3u + has_sinks &&
               std::all_of(dtypes.begin(), dtypes.end(),
                           [&](Dtype t) { return t == in[0].dtype(); }),
           "its gradients are not in the operands' dtype");
    } else {
      need(
          dtypes.size() == 1u + lse && dtypes[0] == in[0].dtype() && (!lse || dtypes[1] == float32),
          "its outputs are not the operands' dtype (and float32 lse)");
      need(!lse || shapes[1] == rows, "its lse is not (B, N, Tq)");
    }
  } else if (dynamic_cast<Inverse*>(&prim) || dynamic_cast<Cholesky*>(&prim) ||
             dynamic_cast<QRF*>(&prim) || dynamic_cast<SVD*>(&prim) || dynamic_cast<Eigh*>(&prim) ||
             dynamic_cast<Eig*>(&prim) || dynamic_cast<LUF*>(&prim)) {
    // LAPACK: one float matrix (batch); the outputs the decomposition writes.
    need(in.size() == 1 && rank0 >= 2 && (in[0].dtype() == float32 || in[0].dtype() == float64),
         "it takes one float32 or float64 matrix");
    const Shape& x = in[0].shape();
    int m = x[rank0 - 2], n = x[rank0 - 1], k = std::min(m, n);
    auto with_last = [&](std::initializer_list<int> last) {
      Shape out(x.begin(), x.end() - 2);
      out.insert(out.end(), last);
      return out;
    };
    Dtype dt = in[0].dtype();
    std::vector<Shape> want;
    std::vector<Dtype> want_dtypes;
    bool square =
        !dynamic_cast<QRF*>(&prim) && !dynamic_cast<SVD*>(&prim) && !dynamic_cast<LUF*>(&prim);
    need(!square || m == n, "its matrix is not square");
    if (dynamic_cast<Inverse*>(&prim) || dynamic_cast<Cholesky*>(&prim)) {
      want = {x};
      want_dtypes = {dt};
    } else if (dynamic_cast<QRF*>(&prim)) {
      want = {with_last({m, k}), with_last({k, n})};
      want_dtypes = {dt, dt};
    } else if (auto* p = dynamic_cast<SVD*>(&prim)) {
      Shape s_shape(x.begin(), x.end() - 2);
      s_shape.push_back(k);
      if (std::get<0>(p->state())) {
        want = {with_last({m, m}), s_shape, with_last({n, n})};
        want_dtypes = {dt, dt, dt};
      } else {
        want = {s_shape};
        want_dtypes = {dt};
      }
    } else if (dynamic_cast<Eigh*>(&prim) || dynamic_cast<Eig*>(&prim)) {
      Shape w(x.begin(), x.end() - 1);
      bool vectors = dynamic_cast<Eigh*>(&prim) ? std::get<1>(dynamic_cast<Eigh*>(&prim)->state())
                                                : std::get<0>(dynamic_cast<Eig*>(&prim)->state());
      Dtype out = dynamic_cast<Eig*>(&prim) ? complex64 : dt;
      want = vectors ? std::vector<Shape>{w, x} : std::vector<Shape>{w};
      want_dtypes = std::vector<Dtype>(want.size(), out);
    } else {
      Shape piv(x.begin(), x.end() - 2), perm(x.begin(), x.end() - 2);
      piv.push_back(k);
      perm.push_back(m);
      want = {x, piv, perm};
      want_dtypes = {dt, uint32, uint32};
    }
    need(shapes == want && dtypes == want_dtypes, "its outputs are not what it computes");
  } else if (dynamic_cast<Solve*>(&prim)) {
    need(in.size() == 2 && rank0 >= 2 && in[1].shape().size() == rank0 &&
             in[0].shape(-1) == in[0].shape(-2) && in[1].shape(-2) == in[0].shape(-1),
         "its operands do not fit together");
  } else if (dynamic_cast<Unary*>(&prim)) {
    need(in.size() == 1, "it takes one input");
    bool predicate = is_one_of(name, {"IsNaN", "IsInf", "IsPosInf", "IsNegInf", "IsFinite"});
    bool to_real = is_complex(in[0].dtype()) && is_one_of(name, {"Abs", "Real", "Imag"});
    need(dtypes[0] == in[0].dtype() || (predicate && dtypes[0] == bool_) ||
             (to_real && dtypes[0] == float32),
         "its output dtype does not follow from its input's");
  } else if (dynamic_cast<Binary*>(&prim) || dynamic_cast<DivMod*>(&prim)) {
    need(in.size() == 2, "it takes two inputs");
    same_inputs(0, 2);
    bool comparison = is_one_of(
        name, {"Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "NaNEqual"});
    for (auto& d : dtypes) {
      need(d == in[0].dtype() || (comparison && d == bool_),
           "its output dtype does not follow from its inputs'");
    }
  } else if (dynamic_cast<Select*>(&prim)) {
    need(in.size() == 3 && in[0].dtype() == bool_, "it takes a bool condition and two values");
    need(in[0].shape() == in[1].shape(), "its inputs must share one shape");
    same_inputs(1, 3);
    need(dtypes[0] == in[1].dtype(), "its output dtype differs from its values'");
  } else if (auto* p = dynamic_cast<Transpose*>(&prim)) {
    auto [axes] = p->state();
    need(axes.size() == rank0 && axes_ok(axes, rank0), "its axes are not a permutation");
  } else if (auto* p = dynamic_cast<Reduce*>(&prim)) {
    need(axes_ok(std::get<1>(p->state()), rank0), "its axes are out of range or repeated");
  } else if (auto* p = dynamic_cast<ArgReduce*>(&prim)) {
    need(axis_ok(std::get<1>(p->state()), rank0), "its axis is out of range");
  } else if (auto* p = dynamic_cast<Scan*>(&prim)) {
    need(axis_ok(std::get<1>(p->state()), rank0), "its axis is out of range");
  } else if (auto* p = dynamic_cast<Concatenate*>(&prim)) {
    int axis = std::get<0>(p->state());
    need(!in.empty() && axis_ok(axis, rank0), "its axis is out of range");
    for (auto& x : in) {
      need(same_but_axis(x.shape(), in[0].shape(), axis),
           "its inputs differ in shape outside the axis");
    }
  } else if (auto* p = dynamic_cast<GatherAxis*>(&prim)) {
    need(in.size() == 2 && axis_ok(std::get<0>(p->state()), rank0) &&
             same_but_axis(in[1].shape(), in[0].shape(), std::get<0>(p->state())),
         "its axis or indices do not fit its input");
    need(is_integral(in[1].dtype()), "its indices are not integers");
  } else if (auto* p = dynamic_cast<ScatterAxis*>(&prim)) {
    need(in.size() == 3 && axis_ok(std::get<1>(p->state()), rank0) &&
             same_but_axis(in[1].shape(), in[0].shape(), std::get<1>(p->state())) &&
             in[2].shape() == in[1].shape() && in[2].dtype() == in[0].dtype(),
         "its axis, indices or updates do not fit its input");
    need(is_integral(in[1].dtype()), "its indices are not integers");
  } else if (auto* p = dynamic_cast<Gather*>(&prim)) {
    auto [axes, sizes] = p->state();
    need(in.size() == axes.size() + 1 && axes_ok(axes, rank0) && sizes.size() == rank0,
         "its axes or slice sizes do not fit its input");
    for (size_t i = 0; i < rank0; ++i) {
      need(sizes[i] >= 0 && sizes[i] <= in[0].shape(i), "a slice is larger than its input");
    }
    same_inputs(1, in.size());
    for (size_t i = 1; i < in.size(); ++i) {
      need(is_integral(in[i].dtype()), "its indices are not integers");
    }
  } else if (auto* p = dynamic_cast<Scatter*>(&prim)) {
    auto axes = std::get<1>(p->state());
    need(in.size() == axes.size() + 2 && axes_ok(axes, rank0), "its axes do not fit its input");
    same_inputs(1, in.size() - 1);
    const array& upd = in.back();
    size_t idx_rank = axes.empty() ? 0 : in[1].shape().size();
    need(upd.dtype() == in[0].dtype() && upd.shape().size() == idx_rank + rank0,
         "its updates do not fit its input");
    for (size_t i = 0; i < rank0 && upd.shape().size() == idx_rank + rank0; ++i) {
      need(upd.shape(idx_rank + i) <= in[0].shape(i), "an update slice is larger than its input");
    }
  } else if (auto* p = dynamic_cast<SortAlongAxis*>(&prim)) {
    auto [kind, axis, kth] = p->state();
    need(axis_ok(axis, rank0), "its axis is out of range");
    need(kth >= 0 && (in[0].shape(axis) == 0 || kth < in[0].shape(axis)),
         "its kth is out of range");
  } else if (dynamic_cast<Matmul*>(&prim) || dynamic_cast<AddMM*>(&prim)) {
    size_t a = dynamic_cast<AddMM*>(&prim) ? 1 : 0;
    need(in.size() == a + 2 && in[a].shape().size() >= 2 &&
             in[a].shape().size() == in[a + 1].shape().size(),
         "its operands must be matrices of one rank");
    const Shape& x = in[a].shape();
    const Shape& y = in[a + 1].shape();
    need(std::equal(x.begin(), x.end() - 2, y.begin()) && x.back() == y[y.size() - 2],
         "its operands' shapes do not multiply");
    auto* mm = dynamic_cast<Matmul*>(&prim);
    const bool wide = mm && mm->float32_out();
    need(!wide || (is_half(in[0].dtype()) && dtypes[0] == float32),
         "only float16 / bfloat16 operands have a float32 product");
    for (auto& v : in) {
      need(v.dtype() == in[0].dtype() && (wide || v.dtype() == dtypes[0]),
           "its operands differ from the output dtype");
    }
    if (a == 1) {
      Shape out = x;
      out.back() = y.back();
      bool fits = in[0].shape().size() == out.size();
      for (size_t d = 0; fits && d < out.size(); ++d) {
        fits = in[0].shape(d) == out[d] || in[0].shape(d) == 1;
      }
      need(fits, "its addend does not broadcast to the product's shape");
    }
  } else if (auto* mcs = dynamic_cast<MatmulColumnSums*>(&prim)) {
    need(in.size() == 2 && in[0].shape().size() == 2 && in[1].shape().size() == 2 &&
             in[0].shape(1) == in[1].shape(0),
         "its operands' shapes do not multiply");
    const Dtype dt = in[0].dtype();
    need(mcs->float32_outputs() < 4 && (mcs->float32_outputs() == 0 || is_half(dt)),
         "only float16 / bfloat16 operands have float32 outputs");
    need(dtypes.size() == 2 && in[1].dtype() == dt &&
             dtypes[0] == (mcs->float32_output(0) ? float32 : dt) &&
             dtypes[1] == (mcs->float32_output(1) ? float32 : dt),
         "its operands differ from the output dtype");
  } else if (auto* q = dynamic_cast<QuantizedProduct*>(&prim)) {
    // x, w, scales, then biases (affine) or an optional global scale (nvfp4, gather only), then
    // lhs and rhs (gather).
    const bool gather = dynamic_cast<GatherQMM*>(q) != nullptr;
    const bool affine = q->mode() == QuantMode::affine;
    const size_t rank = gather ? 3 : 2;
    const size_t scale_inputs = in.size() - 2 - (gather ? 2 : 0);
    need(in.size() >= (gather ? 5u : 3u) &&
             (affine ? scale_inputs == 2
                     : scale_inputs == 1 ||
                           (gather && q->mode() == QuantMode::nvfp4 && scale_inputs == 2)),
         "it does not take the inputs of its quantization mode");
    need(in[1].shape().size() == rank && rank0 == (gather ? 3 : rank0) && rank0 >= 1,
         "its operands do not have the ranks it multiplies");
    int cols = 0;
    try {
      auto qp = quant_params(q->group_size(), q->bits(), quant_mode_name(q->mode()), name);
      cols =
          check_packed(in[1], in[2], affine ? std::optional<array>(in[3]) : std::nullopt, qp, name);
    } catch (const std::exception& e) {
      fail(e.what());
    }
    if (!affine && scale_inputs == 2) {
      need(in[3].size() == 1 && in[3].dtype() == float32,
           "its global scale is not a float32 scalar");
    }
    const int rows = in[1].shape(-2);
    need(in[0].shape(-1) == (q->transpose() ? cols : rows), "its operands' shapes do not multiply");
    need(is_floating_point(dtypes[0]) && in[0].dtype() == dtypes[0] &&
             (!affine || (in[2].dtype() == dtypes[0] && in[3].dtype() == dtypes[0])),
         "its operands differ from the output dtype");
    if (gather) {
      const array &lhs = in[in.size() - 2], &rhs = in[in.size() - 1];
      need(is_integral(lhs.dtype()) && is_integral(rhs.dtype()) && lhs.shape() == rhs.shape(),
           "its indices are not integer arrays of one shape");
    }
  } else if (dynamic_cast<GatherMM*>(&prim) || dynamic_cast<SegmentedMM*>(&prim)) {
    const bool gather = dynamic_cast<GatherMM*>(&prim) != nullptr;
    const size_t rank = gather ? 3 : 2;
    need(in.size() == (gather ? 4u : 3u) && rank0 == rank && in[1].shape().size() == rank,
         "its operands are not matrices (stacks of matrices) and indices");
    need(in[0].shape(-1) == in[1].shape(-2), "its operands' shapes do not multiply");
    need(is_floating_point(dtypes[0]) && in[0].dtype() == dtypes[0] && in[1].dtype() == dtypes[0],
         "its operands differ from the output dtype");
    for (size_t i = 2; i < in.size(); ++i) {
      need(is_integral(in[i].dtype()), "its indices are not integers");
    }
    if (gather) {
      need(in[2].shape() == in[3].shape(), "its index arrays differ in shape");
    } else {
      need(!in[2].shape().empty() && in[2].shape().back() == 2, "its segments are not pairs");
    }
  } else if (dynamic_cast<Hadamard*>(&prim)) {
    need(in.size() == 1 && rank0 >= 1 && is_floating_point(in[0].dtype()) &&
             dtypes[0] == in[0].dtype(),
         "it takes one floating array of its output dtype");
    int64_t n = in[0].shape(-1);
    need(n == 0 || hadamard_size(n).m != 0, "its length is not m * 2^k (m in 1, 12, 20, 28)");
  } else if (dynamic_cast<Convolution*>(&prim) || dynamic_cast<ConvWeightGrad*>(&prim)) {
    auto* dw = dynamic_cast<ConvWeightGrad*>(&prim);
    const ConvParams& params = dw ? dw->params() : dynamic_cast<Convolution*>(&prim)->params();
    size_t nd = rank0 >= 2 ? rank0 - 2 : 0;
    need(in.size() == 2 && rank0 >= 3 && in[1].shape().size() == rank0,
         dw ? "it takes an input and a cotangent" : "it takes an input and a weight");
    for (auto* v : {&params.stride, &params.kernel_dilation, &params.input_dilation}) {
      need(v->size() == nd && std::all_of(v->begin(), v->end(), [](int s) { return s >= 1; }),
           "its strides and dilations must be positive, one per spatial dimension");
    }
    need(params.padding_lo.size() == nd && params.padding_hi.size() == nd && params.groups >= 1,
         "its padding or groups are invalid");
    if (dw) {
      need(dw->kernel().size() == nd &&
               std::all_of(dw->kernel().begin(), dw->kernel().end(), [](int k) { return k >= 1; }),
           "its kernel shape is invalid");
      need(in[0].shape(-1) % params.groups == 0 && in[1].shape(-1) % params.groups == 0,
           "its channels do not match its groups");
      Shape x = conv_output_shape(
          params, in[0].shape(),
          conv_weight_grad_shape(params, dw->kernel(), in[0].shape(), in[1].shape()));
      need(in[1].shape() == x, "its cotangent is not shaped as the convolution's output");
      need(is_floating_point(dtypes[0]), "it computes floating types");
    } else {
      need(in[0].shape(-1) % params.groups == 0 && in[1].shape(0) % params.groups == 0 &&
               in[1].shape(-1) * params.groups == in[0].shape(-1),
           "its channels do not match its groups");
    }
  } else if (auto* p = dynamic_cast<FFT*>(&prim)) {
    auto [axis, n, inverse, real] = p->state();
    need(axis_ok(axis, rank0) && n >= 1, "its axis or length is invalid");
  } else if (auto* p = dynamic_cast<RandomBits*>(&prim)) {
    int width = std::get<1>(p->state());
    need(width == 1 || width == 2 || width == 4 || width == 8, "its width is invalid");
    need(in.size() == 1 && rank0 >= 1 && in[0].shape(-1) == 2 && in[0].dtype() == uint32,
         "its key is invalid");
  } else if (auto* p = dynamic_cast<NumberOfElements*>(&prim)) {
    need(axes_ok(std::get<0>(p->state()), rank0), "its axes are out of range");
  } else if (auto* p = dynamic_cast<SliceUpdate*>(&prim)) {
    auto [start, stop, strides] = p->state();
    need(in.size() == 2 && start.size() == rank0 && stop.size() == rank0 &&
             strides.size() == rank0 && in[1].shape().size() == rank0 &&
             in[1].dtype() == in[0].dtype(),
         "its bounds or update do not fit its input");
    for (size_t i = 0; i < rank0; ++i) {
      int64_t n = in[1].shape(i);
      int64_t last = start[i] + (n - 1) * int64_t(strides[i]);
      need(strides[i] != 0 && (n == 0 || (start[i] >= 0 && start[i] < in[0].shape(i) && last >= 0 &&
                                          last < in[0].shape(i))),
           "it writes outside its input");
    }
  } else if (auto* p = dynamic_cast<Reshape*>(&prim)) {
    uint64_t a = 1, b = 1;
    for (int d : in[0].shape()) {
      a *= d;
    }
    for (int d : shapes[0]) {
      b *= d;
    }
    need(a == b, "it changes the number of elements");
    (void)p;
  }
}

bool needs_row_contiguous_inputs(Primitive& prim) {
  return dynamic_cast<Scatter*>(&prim) || dynamic_cast<ScatterAxis*>(&prim);
}

}  // namespace mlx::core::detail
