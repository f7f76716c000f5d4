#include <map>
#include <string>

#include "test_utils.h"
#include "transform_check.h"

using namespace mlx::core;
using namespace mlx::core::test;

namespace {

std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == ',') {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

// Naive float64 einsum over every assignment of the labels, for explicit letter-only
// subscripts ("ab,bc->ac"); size-1 dimensions broadcast.
std::vector<double> reference(const std::string& eq, const std::vector<array>& ops,
                              Shape& out_shape) {
  size_t arrow = eq.find("->");
  auto terms = split_terms(eq.substr(0, arrow));
  std::string out = eq.substr(arrow + 2);
  std::map<char, int> sizes;
  std::vector<std::vector<double>> vals;
  for (size_t k = 0; k < ops.size(); ++k) {
    vals.push_back(to_vector(ops[k]));
    for (size_t d = 0; d < terms[k].size(); ++d) {
      int& s = sizes[terms[k][d]];
      s = std::max(s, ops[k].shape(d));
      if (ops[k].shape(d) == 0) {
        s = 0;
      }
    }
  }
  std::string labels;
  for (auto& [c, n] : sizes) {
    labels.push_back(c);
  }
  out_shape.clear();
  size_t out_size = 1;
  for (char c : out) {
    out_shape.push_back(sizes[c]);
    out_size *= sizes[c];
  }
  std::vector<double> result(out_size, 0.0);
  for (auto& [c, n] : sizes) {
    if (n == 0) {
      return result;
    }
  }
  std::map<char, int> idx;
  for (char c : labels) {
    idx[c] = 0;
  }
  while (true) {
    double prod = 1;
    for (size_t k = 0; k < ops.size(); ++k) {
      size_t flat = 0;
      for (size_t d = 0; d < terms[k].size(); ++d) {
        int dim = ops[k].shape(d);
        flat = flat * dim + (dim == 1 ? 0 : idx[terms[k][d]]);
      }
      prod *= vals[k][flat];
    }
    size_t o = 0;
    for (char c : out) {
      o = o * sizes[c] + idx[c];
    }
    result[o] += prod;
    size_t p = labels.size();
    while (p > 0) {
      char c = labels[p - 1];
      if (++idx[c] < sizes[c]) {
        break;
      }
      idx[c] = 0;
      --p;
    }
    if (p == 0) {
      return result;
    }
  }
}

// einsum(eq, ops) against the float64 reference for `ref_eq` (defaults to eq).
void check(const std::string& eq, const std::vector<array>& ops, const std::string& ref_eq = "",
           double rtol = -1) {
  SCOPED_TRACE(eq);
  Shape shape;
  auto expected = reference(ref_eq.empty() ? eq : ref_eq, ops, shape);
  array out = einsum(eq, ops);
  expect_close(out, expected, shape, rtol);
}

std::vector<array> randoms(const std::vector<Shape>& shapes, Dtype dtype = float32) {
  std::vector<array> out;
  uint32_t seed = 1;
  for (auto& s : shapes) {
    out.push_back(random_array(s, dtype, -1.0, 1.0, seed++));
  }
  return out;
}

}  // namespace

TEST(Einsum, MatrixProducts) {
  for (Dtype t : {float32, float64}) {
    check("ij,jk->ik", randoms({{3, 4}, {4, 5}}, t));
    check("ij,jk", randoms({{3, 4}, {4, 5}}, t), "ij,jk->ik");
    check("ij,kj->ik", randoms({{3, 4}, {5, 4}}, t));
    check("bij,bjk->bik", randoms({{2, 3, 4}, {2, 4, 5}}, t));
    check("bij,bjk->bki", randoms({{2, 3, 4}, {2, 4, 5}}, t));
    check("i,i", randoms({{7}, {7}}, t), "i,i->");
    check("i,j->ij", randoms({{3}, {4}}, t));
    check("ij,ij->ij", randoms({{2, 3}, {2, 3}}, t));
    check("abcd,cdbe->ae", randoms({{2, 3, 4, 5}, {4, 5, 3, 2}}, t));
    check("bij,jk->bik", randoms({{3, 2, 4}, {4, 5}}, t));
  }
  // Integers stay exact and keep their dtype.
  auto ints = randoms({{4, 6}, {6, 3}}, int32);
  ints = {multiply(ints[0], array(5)), multiply(ints[1], array(7))};
  array r = einsum("ij,jk->ik", ints);
  EXPECT_EQ(r.dtype(), int32);
  check("ij,jk->ik", ints);
  check("ij,jk->ik", randoms({{5, 6}, {6, 3}}, float16), "", 5e-3);
}

TEST(Einsum, SingleOperand) {
  auto sq = randoms({{4, 4}});
  check("ii", sq, "ii->");
  check("ii->", sq);
  check("ii->i", sq);
  check("ij->ji", sq);
  check("ji", sq, "ji->ij");
  check("ijk->kij", randoms({{2, 3, 4}}));
  check("ij->", randoms({{3, 5}}));
  check("ij->j", randoms({{3, 5}}));
  check("iij->ji", randoms({{3, 3, 2}}));
  check("iji->j", randoms({{3, 2, 3}}));
  check("iii->i", randoms({{3, 3, 3}}));
  // An integer sum keeps the operand dtype (int8 wraps like NumPy).
  array big = full({2, 2}, 100, int8);
  array s = einsum("ij->", {big});
  EXPECT_EQ(s.dtype(), int8);
  EXPECT_EQ(s.item<int8_t>(), static_cast<int8_t>(400));
}

TEST(Einsum, Ellipsis) {
  check("...ij,...jk->...ik", randoms({{2, 1, 3, 4}, {5, 4, 2}}), "abij,bjk->abik");
  check("...ij,...jk", randoms({{2, 3, 4}, {4, 5}}), "aij,jk->aik");
  check("i...->...", randoms({{3, 2, 4}}), "iab->ab");
  check("...ii->...i", randoms({{2, 3, 3}}), "aii->ai");
  check("...,...", randoms({{2, 3}, {3}}), "ab,b->ab");
  check("i...,i...->...", randoms({{2, 3}, {2, 1}}), "ia,ia->a");
  check("ij...->j", randoms({{2, 3}}), "ij->j");
}

TEST(Einsum, ManyOperands) {
  check("ij,jk,kl->il", randoms({{3, 4}, {4, 5}, {5, 2}}));
  check("ij,jk,kl", randoms({{5, 8}, {8, 10}, {10, 7}}), "ij,jk,kl->il");
  check("ab,bc,cd,da->", randoms({{2, 3}, {3, 4}, {4, 5}, {5, 2}}));
  check("ea,fb,abcd,gc,hd->efgh", randoms({{2, 3}, {2, 2}, {3, 2, 2, 3}, {3, 2}, {2, 3}}));
  check("i,j,k->ijk", randoms({{2}, {3}, {4}}));
  check("ii,ij,jk->k", randoms({{3, 3}, {3, 4}, {4, 2}}));
  check("bij,bjk,b->bik", randoms({{2, 3, 4}, {2, 4, 5}, {2}}));
}

TEST(Einsum, ScalarsAndBroadcast) {
  std::vector<array> ops = {array(2.5f), random_array({2, 3})};
  check(",ij->ij", ops);
  check(",ij", ops, ",ij->ij");
  check(",->", {array(2.0f), array(3.0f)});
  check("", {array(4.0f)}, "->");
  check("i,i->i", randoms({{1}, {3}}));
  check("i,i", randoms({{1}, {3}}), "i,i->");
  check("ij,jk->ik", randoms({{3, 1}, {4, 2}}));
}

TEST(Einsum, ZeroSize) {
  check("ij,jk->ik", randoms({{2, 0}, {0, 3}}));
  check("ij,jk->ik", randoms({{0, 4}, {4, 3}}));
  check("ij,jk->ik", randoms({{3, 4}, {4, 0}}));
  check("bij,bjk->bik", randoms({{0, 2, 3}, {0, 3, 4}}));
  check("i->", randoms({{0}}));
  check("ii->i", randoms({{0, 0}}));
  check("i,j->ij", randoms({{0}, {3}}));
}

TEST(Einsum, NonContiguousInputs) {
  array a = transpose(random_array({5, 4}, float32, -1, 1, 3));
  array b = slice(random_array({10, 6}, float32, -1, 1, 4), {0, 0}, {10, 6}, {2, 1});
  array c = slice(random_array({6, 3}, float32, -1, 1, 5), {5, 2}, {-7, -4}, {-1, -1});
  check("ij,jk,kl->il", {a, b, c});
  check("ij,kj->ik", {b, b});
  check("ii->i", {slice(random_array({8, 8}), {0, 0}, {8, 8}, {2, 2})});
  check("ij,jk->ik", {broadcast_to(random_array({1, 5}), {3, 5}), random_array({5, 2})});
}

TEST(Einsum, LargeContraction) {
  // Large enough for the multithreaded matmul path.
  check("bij,bjk->bik", randoms({{4, 64, 96}, {4, 96, 48}}), "", 1e-4);
  check("ijk,jkl->il", randoms({{40, 30, 20}, {30, 20, 30}}), "", 1e-4);
}

TEST(Einsum, Path) {
  using Path = std::vector<std::vector<int>>;
  EXPECT_EQ(einsum_path("ii", {zeros({5, 5})}).first, (Path{{0}}));
  EXPECT_EQ(einsum_path("ij,jk", {zeros({5, 8}), zeros({8, 3})}).first, (Path{{0, 1}}));
  EXPECT_EQ(einsum_path("ij,jk,kl", {zeros({5, 8}), zeros({8, 3}), zeros({3, 7})}).first,
            (Path{{0, 1}, {0, 1}}));
  // Contracting the two larger operands first shrinks the total more.
  auto [path, info] = einsum_path("ij,jk,kl", {zeros({5, 8}), zeros({8, 10}), zeros({10, 7})});
  EXPECT_EQ(path, (Path{{1, 2}, {0, 1}}));
  EXPECT_NE(info.find("Complete contraction:  ij,jk,kl->il"), std::string::npos) << info;
  EXPECT_NE(info.find("Optimized scaling:  3"), std::string::npos) << info;
  auto many = einsum_path("ab,bc,cd,de,ef", {zeros({2, 3}), zeros({3, 4}), zeros({4, 5}),
                                             zeros({5, 6}), zeros({6, 7})});
  EXPECT_EQ(many.first.size(), 4u);
}

TEST(Einsum, Gradient) {
  auto f = [](const std::vector<array>& in) {
    return std::vector<array>{einsum("bij,bjk->bik", {in[0], in[1]})};
  };
  check_grad(f, randoms({{2, 3, 4}, {2, 4, 2}}, float64));
  auto g = [](const std::vector<array>& in) {
    return std::vector<array>{einsum("ii,ij,jk->k", {in[0], in[1], in[2]})};
  };
  check_grad(g, randoms({{3, 3}, {3, 4}, {4, 2}}, float64));
  check_vmap(f, randoms({{3, 2, 3, 4}, {3, 2, 4, 2}}));
}

TEST(Einsum, Errors) {
  array a = zeros({2, 3});
  array sq = zeros({3, 3});
  EXPECT_THROW(einsum("ij,jk->ik", {a}), std::invalid_argument);      // operand count
  EXPECT_THROW(einsum("ij", {a, a}), std::invalid_argument);          // operand count
  EXPECT_THROW(einsum("ij", {}), std::invalid_argument);              // no operands
  EXPECT_THROW(einsum("i1", {a}), std::invalid_argument);             // invalid character
  EXPECT_THROW(einsum("i.j", {a}), std::invalid_argument);            // lone dot
  EXPECT_THROW(einsum("ij->k", {a}), std::invalid_argument);          // unknown output
  EXPECT_THROW(einsum("ij->ii", {a}), std::invalid_argument);         // repeated output
  EXPECT_THROW(einsum("ij,ij->ij", {a, sq}), std::invalid_argument);  // size mismatch
  EXPECT_THROW(einsum("ii", {a}), std::invalid_argument);             // non-square diagonal
  EXPECT_THROW(einsum("ijk", {a}), std::invalid_argument);            // too many subscripts
  EXPECT_THROW(einsum("i", {a}), std::invalid_argument);              // too few subscripts
  EXPECT_THROW(einsum("...i...", {a}), std::invalid_argument);        // two ellipses
  EXPECT_THROW(einsum("...ij->ij", {zeros({2, 2, 3})}), std::invalid_argument);
  EXPECT_THROW(einsum("ij->i->j", {a}), std::invalid_argument);
  EXPECT_THROW(einsum_path("ij,jk", {a}), std::invalid_argument);
  try {
    einsum("ij,jk->ik", {a, zeros({4, 2})});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[einsum]"), std::string::npos) << e.what();
  }
}
