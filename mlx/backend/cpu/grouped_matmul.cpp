// CPU grouped products. GatherMM groups its products by right-hand matrix (the expert of a
// mixture-of-experts layer): each group's left-hand matrices are gathered into one block of
// rows and multiplied with one BLAS call, so an expert's weights are read once per call
// whatever the number of tokens routed to it. SegmentedMM is one BLAS call per segment on
// the column / row ranges of the operands in place. float16 / bfloat16 compute in float32:
// few rows read a 16-bit right-hand matrix in place, more convert the matrices in use.
#include "mlx/primitives/grouped_matmul.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "mlx/backend/common/convert.h"
#include "mlx/backend/common/gathered_matrices.h"
#include "mlx/backend/cpu/dense.h"
#include "mlx/backend/cpu/gemm.h"
#include "mlx/backend/cpu/half_matvec.h"
#include "mlx/backend/cpu/reduce_utils.h"
#include "mlx/backend/cpu/scratch.h"

namespace mlx::core {

namespace {

using namespace cpu;

template <typename T>
constexpr bool kHalf = is_half_v<T>;

template <typename T>
using Acc = compute_t<T>;

// A stack of matrices (count, R, C) as BLAS reads each one: row-major (trans false) or
// column-major with leading dimension ld, matrix i at base + i * batch.
struct StackLayout {
  int64_t batch;
  bool trans;
  int64_t ld;
};

std::optional<StackLayout> stack_layout(const array& x) {
  int64_t R = x.shape(1), C = x.shape(2);
  int64_t sb = x.strides()[0], sr = x.strides()[1], sc = x.strides()[2];
  if ((C <= 1 || sc == 1) && (R <= 1 || sr >= C)) {
    return StackLayout{sb, false, R <= 1 ? std::max<int64_t>(C, 1) : sr};
  }
  if ((R <= 1 || sr == 1) && (C <= 1 || sc >= R)) {
    return StackLayout{sb, true, C <= 1 ? std::max<int64_t>(R, 1) : sc};
  }
  return std::nullopt;
}

template <typename T>
void convert_to_acc(const T* src, Acc<T>* dst, int64_t n) {
  if constexpr (kHalf<T>) {
    to_float(src, dst, n);
  } else {
    std::memcpy(dst, src, n * sizeof(T));
  }
}

template <typename T>
void convert_from_acc(const Acc<T>* src, T* dst, int64_t n) {
  if constexpr (kHalf<T>) {
    from_float(src, dst, n);
  } else {
    std::memcpy(dst, src, n * sizeof(T));
  }
}

int ld(int64_t n) { return static_cast<int>(std::max<int64_t>(n, 1)); }

template <typename T>
void gather_products(const array& a_in, const array& b_in, const std::vector<int64_t>& lhs,
                     const std::vector<int64_t>& rhs, array& out) {
  using A = Acc<T>;
  const int64_t M = a_in.shape(1), K = a_in.shape(2), N = b_in.shape(2);
  std::optional<array> ah, bh;
  const T* a = row_contiguous(a_in, a_in.dtype(), ah).data<T>();
  auto layout = stack_layout(b_in);
  const array& bc = layout ? b_in : row_contiguous(b_in, b_in.dtype(), bh);
  StackLayout lb = layout ? *layout : StackLayout{K * N, false, std::max<int64_t>(N, 1)};
  const T* b = bc.data<T>();
  T* c = out.data<T>();

  ProductGroups groups = group_by_rhs(rhs, b_in.shape(0));
  int64_t largest = 0;
  for (size_t g = 0; g + 1 < groups.starts.size(); ++g) {
    largest = std::max(largest, groups.starts[g + 1] - groups.starts[g]);
  }
  const bool stage = largest > 1 || kHalf<T>;
  std::optional<Scratch<A>> a_rows, c_rows, b_acc;
  if (stage) {
    a_rows.emplace(largest * M * K);
    c_rows.emplace(largest * M * N);
  }
  for (size_t g = 0; g + 1 < groups.starts.size(); ++g) {
    const int64_t first = groups.starts[g], n = groups.starts[g + 1] - first;
    const T* pb = b + rhs[groups.order[first]] * lb.batch;
    const int64_t rows = n * M;
    if constexpr (!kHalf<T>) {
      if (!stage) {
        const int64_t i = groups.order[first];
        matmul_gemm(false, lb.trans, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K),
                    T(1), a + lhs[i] * M * K, ld(K), pb, static_cast<int>(lb.ld), T(0),
                    c + i * M * N, ld(N));
        continue;
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      convert_to_acc(a + lhs[groups.order[first + j]] * M * K, a_rows->data() + j * M * K, M * K);
    }
    if constexpr (kHalf<T>) {
      if (rows <= kHalfMatvecRows) {
        // Few rows: the expert's 16-bit matrix is read in place.
        half_matvec(rows, N, K, 1.f, a_rows->data(), K, pb, lb.trans, lb.ld, 0.f, c_rows->data(),
                    N);
      } else {
        // The expert's matrix converted once (row- or column-major as stored).
        if (!b_acc) {
          b_acc.emplace(K * N);
        }
        const int64_t len = lb.trans ? K : N;
        for (int64_t r = 0; r < (lb.trans ? N : K); ++r) {
          convert_to_acc(pb + r * lb.ld, b_acc->data() + r * len, len);
        }
        matmul_gemm(false, lb.trans, static_cast<int>(rows), static_cast<int>(N),
                    static_cast<int>(K), 1.f, a_rows->data(), ld(K), b_acc->data(),
                    lb.trans ? ld(K) : ld(N), 0.f, c_rows->data(), ld(N));
      }
    } else {
      matmul_gemm(false, lb.trans, static_cast<int>(rows), static_cast<int>(N), static_cast<int>(K),
                  A(1), a_rows->data(), ld(K), pb, static_cast<int>(lb.ld), A(0), c_rows->data(),
                  ld(N));
    }
    for (int64_t j = 0; j < n; ++j) {
      convert_from_acc(c_rows->data() + j * M * N, c + groups.order[first + j] * M * N, M * N);
    }
  }
}

template <typename T>
void segment_products(const array& a_in, const array& b_in, const std::vector<int64_t>& bounds,
                      array& out) {
  using A = Acc<T>;
  const int64_t M = a_in.shape(0), K = a_in.shape(1), N = b_in.shape(1);
  std::optional<array> ah, bh;
  Dtype acc = kHalf<T> ? float32 : a_in.dtype();
  const A* a = row_contiguous(a_in, acc, ah).template data<A>();
  const A* b = row_contiguous(b_in, acc, bh).template data<A>();
  std::optional<Scratch<A>> c_acc;
  if constexpr (kHalf<T>) {
    c_acc.emplace(M * N);
  }
  for (size_t sgm = 0; sgm < bounds.size() / 2; ++sgm) {
    const int64_t start = bounds[2 * sgm], stop = bounds[2 * sgm + 1];
    T* c = out.data<T>() + sgm * M * N;
    A* dst = kHalf<T> ? c_acc->data() : reinterpret_cast<A*>(c);
    if (stop <= start) {
      std::fill_n(dst, M * N, A(0));
    } else {
      matmul_gemm(false, false, static_cast<int>(M), static_cast<int>(N),
                  static_cast<int>(stop - start), A(1), a + start,
                  static_cast<int>(std::max<int64_t>(K, 1)), b + start * N,
                  static_cast<int>(std::max<int64_t>(N, 1)), A(0), dst,
                  static_cast<int>(std::max<int64_t>(N, 1)));
    }
    if constexpr (kHalf<T>) {
      convert_from_acc(dst, c, M * N);
    }
  }
}

}  // namespace

void GatherMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  auto lhs = matrix_indices(inputs[2], inputs[0].shape(0), "gather_mm");
  auto rhs = matrix_indices(inputs[3], inputs[1].shape(0), "gather_mm");
  if (out.size() == 0) {
    return;
  }
  dispatch_float(out.dtype(), "gather_mm",
                 [&]<typename T>() { gather_products<T>(inputs[0], inputs[1], lhs, rhs, out); });
}

void SegmentedMM::eval_cpu(const std::vector<array>& inputs, array& out) {
  out.set_data(allocator::malloc(out.nbytes()));
  auto bounds = matrix_indices(inputs[2], inputs[0].shape(1) + 1, "segmented_mm");
  if (out.size() == 0) {
    return;
  }
  dispatch_float(out.dtype(), "segmented_mm",
                 [&]<typename T>() { segment_products<T>(inputs[0], inputs[1], bounds, out); });
}

}  // namespace mlx::core
