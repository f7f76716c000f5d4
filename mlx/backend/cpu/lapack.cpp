// CPU kernels of the LAPACK-backed linalg primitives. Inputs are row-contiguous float32 or
// float64 (the op layer guarantees it); LAPACKE's row-major interface does the layout work.
// Matrices of a batch are independent and run in parallel; LAPACK failures (info > 0) are
// collected per matrix and reported on the calling thread.
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <vector>

#include "mlx/backend/common/lapack_common.h"
#include "mlx/backend/cpu/copy.h"
#include "mlx/backend/cpu/scratch.h"
#include "mlx/backend/cpu/thread_pool.h"
#include "mlx/primitives/linalg_lapack.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

using namespace cpu;

// The s/d LAPACKE routines by element type.
template <typename T>
struct Lapack;

#define MLX_LAPACK_TRAITS(T, P)                                                                   \
  template <>                                                                                     \
  struct Lapack<T> {                                                                              \
    static int getrf(int m, int n, T* a, int* ipiv) {                                             \
      return LAPACKE_##P##getrf(LAPACK_ROW_MAJOR, m, n, a, n, ipiv);                              \
    }                                                                                             \
    static int getri(int n, T* a, const int* ipiv) {                                              \
      return LAPACKE_##P##getri(LAPACK_ROW_MAJOR, n, a, n, ipiv);                                 \
    }                                                                                             \
    static int trtri(char uplo, int n, T* a) {                                                    \
      return LAPACKE_##P##trtri(LAPACK_ROW_MAJOR, uplo, 'N', n, a, n);                            \
    }                                                                                             \
    static int potrf(char uplo, int n, T* a) {                                                    \
      return LAPACKE_##P##potrf(LAPACK_ROW_MAJOR, uplo, n, a, n);                                 \
    }                                                                                             \
    static int potri(char uplo, int n, T* a) {                                                    \
      return LAPACKE_##P##potri(LAPACK_ROW_MAJOR, uplo, n, a, n);                                 \
    }                                                                                             \
    static int gesv(int n, int k, T* a, int* ipiv, T* b) {                                        \
      return LAPACKE_##P##gesv(LAPACK_ROW_MAJOR, n, k, a, n, ipiv, b, k);                         \
    }                                                                                             \
    static int geqrf(int m, int n, T* a, T* tau) {                                                \
      return LAPACKE_##P##geqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau);                               \
    }                                                                                             \
    static int orgqr(int m, int k, int lda, T* a, const T* tau) {                                 \
      return LAPACKE_##P##orgqr(LAPACK_ROW_MAJOR, m, k, k, a, lda, tau);                          \
    }                                                                                             \
    static int gesdd(char jobz, int m, int n, T* a, T* s, T* u, T* vt) {                          \
      return LAPACKE_##P##gesdd(LAPACK_ROW_MAJOR, jobz, m, n, a, n, s, u, m, vt, n);              \
    }                                                                                             \
    static int syevd(char jobz, char uplo, int n, T* a, T* w) {                                   \
      return LAPACKE_##P##syevd(LAPACK_ROW_MAJOR, jobz, uplo, n, a, n, w);                        \
    }                                                                                             \
    static int geev(char jobvr, int n, T* a, T* wr, T* wi, T* vr) {                               \
      return LAPACKE_##P##geev(LAPACK_ROW_MAJOR, 'N', jobvr, n, a, n, wr, wi, nullptr, n, vr, n); \
    }                                                                                             \
  };

MLX_LAPACK_TRAITS(float, s)
MLX_LAPACK_TRAITS(double, d)
#undef MLX_LAPACK_TRAITS

void check_row_contiguous(const array& a, const char* op) {
  if (!a.flags().row_contiguous) {
    throw std::runtime_error(msg("[", op, "] Internal error: input is not row-contiguous."));
  }
}

int64_t batch_count(const array& a) {
  int64_t m = a.shape(-2), n = a.shape(-1);
  return m * n == 0 ? 0 : static_cast<int64_t>(a.size()) / (m * n);
}

// Runs f(i) -> LAPACK info for each of `count` matrices, in parallel when the batch is large,
// and throws for the first matrix that failed (lapack_errors.h).
template <typename F>
void for_each_matrix(int64_t count, int64_t bytes_per_matrix, F&& f, const char* op) {
  std::vector<int> info(count, 0);
  int64_t grain = std::max<int64_t>(1, kParallelBytes / std::max<int64_t>(bytes_per_matrix, 1));
  parallel_for(count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      info[i] = f(i);
    }
  });
  for (int64_t i = 0; i < count; ++i) {
    if (info[i] < 0) {
      throw std::runtime_error(lapack_rejected(op, info[i]));
    }
    if (info[i] > 0) {
      throw std::invalid_argument(lapack_failure(op, info[i]));
    }
  }
}

// Zeros the strict lower (upper == true keeps the upper triangle) or strict upper triangle.
template <typename T>
void keep_triangle(T* a, int n, bool upper) {
  for (int i = 0; i < n; ++i) {
    T* row = a + static_cast<int64_t>(i) * n;
    if (upper) {
      std::fill(row, row + i, T(0));
    } else {
      std::fill(row + i + 1, row + n, T(0));
    }
  }
}

// Mirrors the stored triangle into the other one.
template <typename T>
void symmetrize(T* a, int n, bool upper) {
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      T* lo = a + static_cast<int64_t>(j) * n + i;
      T* up = a + static_cast<int64_t>(i) * n + j;
      upper ? (*lo = *up) : (*up = *lo);
    }
  }
}

}  // namespace

void Inverse::eval_cpu(const std::vector<array>& inputs, array& out) {
  check_row_contiguous(inputs[0], "linalg::inv");
  copy_to_contiguous(inputs[0], out);
  int n = out.shape(-1);
  char uplo = upper_ ? 'U' : 'L';
  dispatch_lapack(out.dtype(), "linalg::inv", [&]<typename T>() {
    T* base = out.data<T>();
    for_each_matrix(
        batch_count(out), int64_t(n) * n * sizeof(T),
        [&](int64_t i) {
          T* a = base + i * n * n;
          switch (kind_) {
            case Kind::General: {
              std::vector<int> ipiv(n);
              int info = Lapack<T>::getrf(n, n, a, ipiv.data());
              return info != 0 ? info : Lapack<T>::getri(n, a, ipiv.data());
            }
            case Kind::Triangular: {
              keep_triangle(a, n, upper_);
              return Lapack<T>::trtri(uplo, n, a);
            }
            case Kind::Cholesky: {
              int info = Lapack<T>::potri(uplo, n, a);
              symmetrize(a, n, upper_);
              return info;
            }
          }
          return 0;
        },
        "linalg::inv");
  });
}

void Cholesky::eval_cpu(const std::vector<array>& inputs, array& out) {
  check_row_contiguous(inputs[0], "linalg::cholesky");
  copy_to_contiguous(inputs[0], out);
  int n = out.shape(-1);
  dispatch_lapack(out.dtype(), "linalg::cholesky", [&]<typename T>() {
    T* base = out.data<T>();
    for_each_matrix(
        batch_count(out), int64_t(n) * n * sizeof(T),
        [&](int64_t i) {
          T* a = base + i * n * n;
          int info = Lapack<T>::potrf(upper_ ? 'U' : 'L', n, a);
          keep_triangle(a, n, upper_);
          return info;
        },
        "linalg::cholesky");
  });
}

void Solve::eval_cpu(const std::vector<array>& inputs, array& out) {
  const array& a = inputs[0];
  check_row_contiguous(a, "linalg::solve");
  copy_to_contiguous(inputs[1], out);
  int n = a.shape(-1), k = out.shape(-1);
  dispatch_lapack(out.dtype(), "linalg::solve", [&]<typename T>() {
    Scratch<T> work(a.size());  // gesv overwrites a with its factors
    std::memcpy(work.data(), a.data<T>(), a.nbytes());
    T* b = out.data<T>();
    for_each_matrix(
        k == 0 ? 0 : batch_count(a), int64_t(n) * (n + k) * sizeof(T),
        [&](int64_t i) {
          std::vector<int> ipiv(n);
          return Lapack<T>::gesv(n, k, work.data() + i * n * n, ipiv.data(), b + i * n * k);
        },
        "linalg::solve");
  });
}

void QRF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  check_row_contiguous(in, "linalg::qr");
  array& q = outputs[0];
  array& r = outputs[1];
  q.set_data(allocator::malloc(q.nbytes()));
  r.set_data(allocator::malloc(r.nbytes()));
  int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  dispatch_lapack(in.dtype(), "linalg::qr", [&]<typename T>() {
    for_each_matrix(
        batch_count(in), int64_t(m) * n * sizeof(T),
        [&](int64_t i) {
          std::vector<T> a(in.data<T>() + i * m * n, in.data<T>() + (i + 1) * m * n);
          std::vector<T> tau(k);
          int info = Lapack<T>::geqrf(m, n, a.data(), tau.data());
          if (info != 0) {
            return info;
          }
          T* pr = r.data<T>() + i * k * n;
          for (int row = 0; row < k; ++row) {
            for (int col = 0; col < n; ++col) {
              pr[row * n + col] = col < row ? T(0) : a[row * n + col];
            }
          }
          info = Lapack<T>::orgqr(m, k, n, a.data(), tau.data());
          T* pq = q.data<T>() + i * m * k;
          for (int row = 0; row < m; ++row) {
            std::copy_n(a.data() + row * n, k, pq + row * k);
          }
          return info;
        },
        "linalg::qr");
  });
}

void SVD::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  check_row_contiguous(in, "linalg::svd");
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  dispatch_lapack(in.dtype(), "linalg::svd", [&]<typename T>() {
    for_each_matrix(
        batch_count(in), int64_t(m) * n * sizeof(T),
        [&](int64_t i) {
          std::vector<T> a(in.data<T>() + i * m * n, in.data<T>() + (i + 1) * m * n);
          if (!compute_uv_) {
            return Lapack<T>::gesdd('N', m, n, a.data(), outputs[0].data<T>() + i * k, nullptr,
                                    nullptr);
          }
          return Lapack<T>::gesdd('A', m, n, a.data(), outputs[1].data<T>() + i * k,
                                  outputs[0].data<T>() + i * m * m,
                                  outputs[2].data<T>() + i * n * n);
        },
        "linalg::svd");
  });
}

void Eigh::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  check_row_contiguous(in, "linalg::eigh");
  array& w = outputs[0];
  w.set_data(allocator::malloc(w.nbytes()));
  int n = in.shape(-1);
  dispatch_lapack(in.dtype(), "linalg::eigh", [&]<typename T>() {
    std::optional<Scratch<T>> scratch;
    T* vecs;
    if (compute_vectors_) {
      copy_to_contiguous(in, outputs[1]);
      vecs = outputs[1].data<T>();
    } else {
      scratch.emplace(in.size());
      std::memcpy(scratch->data(), in.data<T>(), in.nbytes());
      vecs = scratch->data();
    }
    for_each_matrix(
        batch_count(in), int64_t(n) * n * sizeof(T),
        [&](int64_t i) {
          return Lapack<T>::syevd(compute_vectors_ ? 'V' : 'N', upper_ ? 'U' : 'L', n,
                                  vecs + i * n * n, w.data<T>() + i * n);
        },
        "linalg::eigh");
  });
}

void Eig::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  check_row_contiguous(in, "linalg::eig");
  for (auto& o : outputs) {
    o.set_data(allocator::malloc(o.nbytes()));
  }
  int n = in.shape(-1);
  dispatch_lapack(in.dtype(), "linalg::eig", [&]<typename T>() {
    for_each_matrix(
        batch_count(in), int64_t(n) * n * sizeof(T),
        [&](int64_t i) {
          std::vector<T> a(in.data<T>() + i * n * n, in.data<T>() + (i + 1) * n * n);
          // LAPACK's balancing step corrupts the heap on infinite entries (NaN is rejected
          // by LAPACKE): refuse both.
          if (!std::all_of(a.begin(), a.end(), [](T x) { return std::isfinite(x); })) {
            return -1;
          }
          std::vector<T> wr(n), wi(n), vr(compute_vectors_ ? size_t(n) * n : 1);
          int info = Lapack<T>::geev(compute_vectors_ ? 'V' : 'N', n, a.data(), wr.data(),
                                     wi.data(), vr.data());
          if (info != 0) {
            return info;
          }
          auto* w = outputs[0].data<complex64_t>() + i * n;
          for (int j = 0; j < n; ++j) {
            w[j] = complex64_t(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
          }
          if (compute_vectors_) {
            // A conjugate pair (j, j + 1) stores real and imaginary parts in columns j, j + 1.
            auto* v = outputs[1].data<complex64_t>() + i * n * n;
            for (int j = 0; j < n; ++j) {
              bool pair_first = wi[j] != T(0) && j + 1 < n && wi[j] > T(0);
              bool pair_second = wi[j] != T(0) && !pair_first;
              for (int row = 0; row < n; ++row) {
                float re, im;
                if (pair_first) {
                  re = vr[row * n + j], im = vr[row * n + j + 1];
                } else if (pair_second) {
                  re = vr[row * n + j - 1], im = -vr[row * n + j];
                } else {
                  re = vr[row * n + j], im = 0.f;
                }
                v[row * n + j] = complex64_t(re, im);
              }
            }
          }
          return 0;
        },
        "linalg::eig");
  });
}

void LUF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  check_row_contiguous(in, "linalg::lu");
  copy_to_contiguous(in, outputs[0]);
  outputs[1].set_data(allocator::malloc(outputs[1].nbytes()));
  outputs[2].set_data(allocator::malloc(outputs[2].nbytes()));
  int m = in.shape(-2), n = in.shape(-1), k = std::min(m, n);
  if (n == 0) {
    // No columns: no pivoting, p is the identity of every (m-row) matrix.
    uint32_t* p = outputs[2].data<uint32_t>();
    for (size_t i = 0; i < outputs[2].size(); ++i) {
      p[i] = static_cast<uint32_t>(i % m);
    }
    return;
  }
  dispatch_lapack(in.dtype(), "linalg::lu", [&]<typename T>() {
    for_each_matrix(
        batch_count(in), int64_t(m) * n * sizeof(T),
        [&](int64_t i) {
          std::vector<int> ipiv(k);
          // info > 0 only flags an exactly zero U[info-1, info-1]; the factors stay valid.
          int info = Lapack<T>::getrf(m, n, outputs[0].data<T>() + i * m * n, ipiv.data());
          if (info < 0) {
            return info;  // rejected (e.g. NaN entries): ipiv was not written
          }
          uint32_t* piv = outputs[1].data<uint32_t>() + i * k;
          uint32_t* p = outputs[2].data<uint32_t>() + i * m;
          std::vector<uint32_t> rows(m);
          for (int r = 0; r < m; ++r) {
            rows[r] = r;
          }
          for (int r = 0; r < k; ++r) {
            piv[r] = static_cast<uint32_t>(ipiv[r] - 1);
            std::swap(rows[r], rows[piv[r]]);
          }
          // Row r of L U is row rows[r] of A, so A = (L U)[p] with p the inverse of rows.
          for (int r = 0; r < m; ++r) {
            p[rows[r]] = r;
          }
          return std::min(info, 0);
        },
        "linalg::lu");
  });
}

}  // namespace mlx::core
