#include "mlx/ops/einsum.h"

#include <algorithm>
#include <cctype>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "mlx/ops/creation.h"
#include "mlx/ops/elementwise.h"
#include "mlx/ops/linalg.h"
#include "mlx/ops/reduction.h"
#include "mlx/ops/shape.h"
#include "mlx/utils.h"

namespace mlx::core {

namespace {

// Labels are ints: 'A'..'Z' -> 0..25 and 'a'..'z' -> 26..51 (so sorting labels sorts the
// letters as NumPy does), then one label per broadcast (ellipsis) dimension, right-aligned.
constexpr int kLetters = 52;
constexpr int kEllipsis = -1;  // placeholder while parsing

using Labels = std::vector<int>;

int letter_label(char c) {
  return std::isupper(static_cast<unsigned char>(c)) ? c - 'A' : c - 'a' + 26;
}

// The parsed equation: each operand's labels (one per dimension), the output labels and the
// size of every label (size-1 dimensions broadcast).
struct Equation {
  std::vector<Labels> inputs;
  Labels output;
  std::vector<int64_t> sizes;
  int n_ellipsis = 0;  // broadcast dimensions (labels kLetters .. kLetters + n_ellipsis - 1)
};

// Letters and at most one "..." of one term.
Labels parse_term(const std::string& term, const std::string& subscripts) {
  Labels labels;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      labels.push_back(letter_label(c));
    } else if (c == '.' && term.compare(i, 3, "...") == 0) {
      if (ellipsis) {
        throw std::invalid_argument(msg("[einsum] More than one ellipsis in the term '", term,
                                        "' of subscripts '", subscripts, "'."));
      }
      ellipsis = true;
      labels.push_back(kEllipsis);
      i += 2;
    } else {
      throw std::invalid_argument(msg("[einsum] Invalid character '", c, "' in subscripts '",
                                      subscripts,
                                      "'; only letters, ',', '->' and '...' are allowed."));
    }
  }
  return labels;
}

// Replaces the ellipsis placeholder with `n` broadcast labels, right-aligned among `total`.
Labels expand_ellipsis(const Labels& term, int n, int total) {
  Labels out;
  for (int l : term) {
    if (l != kEllipsis) {
      out.push_back(l);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      out.push_back(kLetters + total - n + i);
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

Equation parse(const std::string& subscripts, const std::vector<array>& operands) {
  std::string eq;
  for (char c : subscripts) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      eq.push_back(c);
    }
  }
  size_t arrow = eq.find("->");
  bool explicit_output = arrow != std::string::npos;
  std::string lhs = explicit_output ? eq.substr(0, arrow) : eq;
  std::string rhs = explicit_output ? eq.substr(arrow + 2) : "";
  if (rhs.find("->") != std::string::npos) {
    throw std::invalid_argument(
        msg("[einsum] Subscripts '", subscripts, "' have more than one '->'."));
  }
  auto terms = split(lhs, ',');
  if (operands.empty() || terms.size() != operands.size()) {
    throw std::invalid_argument(msg("[einsum] Subscripts '", subscripts, "' name ", terms.size(),
                                    " operand(s) but ", operands.size(), " were given."));
  }
  Equation e;
  std::vector<Labels> raw;
  std::vector<int> n_broadcast;
  for (size_t k = 0; k < terms.size(); ++k) {
    raw.push_back(parse_term(terms[k], subscripts));
    int letters = std::count_if(raw[k].begin(), raw[k].end(), [](int l) { return l != kEllipsis; });
    bool has_ellipsis = static_cast<int>(raw[k].size()) != letters;
    int ndim = operands[k].ndim();
    if (has_ellipsis ? letters > ndim : letters != ndim) {
      throw std::invalid_argument(msg("[einsum] Operand ", k, " with shape ", operands[k].shape(),
                                      " has ", ndim, " dimension(s) but its subscripts '", terms[k],
                                      "' name ", letters, "."));
    }
    n_broadcast.push_back(ndim - letters);
    e.n_ellipsis = std::max(e.n_ellipsis, ndim - letters);
  }
  e.sizes.assign(kLetters + e.n_ellipsis, -1);
  std::vector<int> counts(kLetters + e.n_ellipsis, 0);
  for (size_t k = 0; k < raw.size(); ++k) {
    e.inputs.push_back(expand_ellipsis(raw[k], n_broadcast[k], e.n_ellipsis));
    for (int d = 0; d < operands[k].ndim(); ++d) {
      int l = e.inputs[k][d];
      int64_t dim = operands[k].shape(d);
      int64_t& size = e.sizes[l];
      if (size != -1 && size != dim && size != 1 && dim != 1) {
        throw std::invalid_argument(msg("[einsum] Dimension mismatch for subscript '",
                                        l < kLetters ? terms[k] : "...", "' of operand ", k,
                                        " with shape ", operands[k].shape(), ": size ", dim,
                                        " but another operand has size ", size, "."));
      }
      size = (size == -1 || size == 1) ? dim : size;
      counts[l]++;
    }
  }
  if (explicit_output) {
    Labels out = parse_term(rhs, subscripts);
    bool has_ellipsis = std::find(out.begin(), out.end(), kEllipsis) != out.end();
    if (!has_ellipsis && e.n_ellipsis > 0) {
      throw std::invalid_argument(
          msg("[einsum] The operands have broadcast ('...') dimensions but the output '", rhs,
              "' of subscripts '", subscripts, "' has no '...'."));
    }
    e.output = expand_ellipsis(out, e.n_ellipsis, e.n_ellipsis);
    for (size_t i = 0; i < out.size(); ++i) {
      int l = out[i];
      if (l == kEllipsis) {
        continue;
      }
      char c = l < 26 ? 'A' + l : 'a' + (l - 26);
      if (counts[l] == 0) {
        throw std::invalid_argument(msg("[einsum] Output subscript '", c,
                                        "' does not appear in the input subscripts of '",
                                        subscripts, "'."));
      }
      if (std::count(out.begin(), out.end(), l) > 1) {
        throw std::invalid_argument(
            msg("[einsum] Output subscript '", c, "' is repeated in '", subscripts, "'."));
      }
    }
  } else {
    // Broadcast dimensions first, then the letters used exactly once, sorted.
    for (int l = kLetters; l < kLetters + e.n_ellipsis; ++l) {
      e.output.push_back(l);
    }
    for (int l = 0; l < kLetters; ++l) {
      if (counts[l] == 1) {
        e.output.push_back(l);
      }
    }
  }
  return e;
}

bool contains(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

// Whether label l is needed outside operand `self` of `terms`: by the output or another term.
bool needed_elsewhere(int l, const std::vector<Labels>& terms, size_t self, const Labels& output) {
  if (contains(output, l)) {
    return true;
  }
  for (size_t k = 0; k < terms.size(); ++k) {
    if (k != self && contains(terms[k], l)) {
      return true;
    }
  }
  return false;
}

// The distinct labels of operand k that survive its own reduction.
Labels needed_labels(const Equation& e, size_t k) {
  Labels kept;
  for (int l : e.inputs[k]) {
    if (!contains(kept, l) && needed_elsewhere(l, e.inputs, k, e.output)) {
      kept.push_back(l);
    }
  }
  return kept;
}

int64_t labels_size(const Labels& ls, const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int l : ls) {
    n *= sizes[l];
  }
  return n;
}

// One step of the contraction: the positions it combines and the labels of its result.
struct Step {
  std::vector<int> operands;
  Labels result;
};

// The contraction order: each operand keeps only the labels needed elsewhere (repeated labels
// become diagonals, others are summed first); then, greedily, the pair whose result shrinks
// the total size the most (ties: the smaller result, then the first pair) is combined, its
// result appended last, as NumPy's greedy path does.
std::vector<Step> plan(const Equation& e) {
  std::vector<Labels> terms;
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    terms.push_back(needed_labels(e, k));
  }
  if (terms.size() == 1) {
    return {{{0}, terms[0]}};
  }
  std::vector<Step> steps;
  while (terms.size() > 1) {
    std::tuple<int64_t, int64_t, int, int> best{0, 0, -1, -1};
    Labels best_result;
    for (int i = 0; i < static_cast<int>(terms.size()); ++i) {
      for (int j = i + 1; j < static_cast<int>(terms.size()); ++j) {
        std::vector<Labels> rest;
        for (int k = 0; k < static_cast<int>(terms.size()); ++k) {
          if (k != i && k != j) {
            rest.push_back(terms[k]);
          }
        }
        Labels result;
        for (const Labels* t : {&terms[i], &terms[j]}) {
          for (int l : *t) {
            if (!contains(result, l) && needed_elsewhere(l, rest, rest.size(), e.output)) {
              result.push_back(l);
            }
          }
        }
        int64_t size = labels_size(result, e.sizes);
        std::tuple<int64_t, int64_t, int, int> key{
            size - labels_size(terms[i], e.sizes) - labels_size(terms[j], e.sizes), size, i, j};
        if (std::get<2>(best) < 0 || key < best) {
          best = key;
          best_result = result;
        }
      }
    }
    int i = std::get<2>(best), j = std::get<3>(best);
    terms.erase(terms.begin() + j);
    terms.erase(terms.begin() + i);
    terms.push_back(best_result);
    steps.push_back({{i, j}, best_result});
  }
  return steps;
}

// Takes diagonals of repeated labels and sums the labels outside `keep`.
array reduce_operand(array x, Labels& labels, const Labels& keep, StreamOrDevice s) {
  // Each diagonal removes a repeated pair and appends its label, so rescan from the start.
  for (size_t p = 0; p < labels.size();) {
    auto it = std::find(labels.begin() + p + 1, labels.end(), labels[p]);
    if (it == labels.end()) {
      ++p;
      continue;
    }
    int q = it - labels.begin();
    if (x.shape(p) != x.shape(q)) {
      throw std::invalid_argument(
          msg("[einsum] A repeated subscript needs equal dimensions but "
              "an operand with shape ",
              x.shape(), " repeats one over sizes ", x.shape(p), " and ", x.shape(q), "."));
    }
    int l = labels[p];
    x = diagonal(x, 0, p, q, s);
    labels.erase(labels.begin() + q);
    labels.erase(labels.begin() + p);
    labels.push_back(l);
    p = 0;
  }
  std::vector<int> axes;
  Labels kept;
  for (size_t d = 0; d < labels.size(); ++d) {
    if (contains(keep, labels[d])) {
      kept.push_back(labels[d]);
    } else {
      axes.push_back(d);
    }
  }
  labels = kept;
  return axes.empty() ? x : sum(x, axes, false, s);
}

// The dimensions of x (labelled `labels`) for the labels `ls`, taking the larger of x's and
// y's size where both have the label (size-1 dimensions broadcast).
Shape dims_of(const Labels& ls, const array& x, const Labels& lx, const array& y,
              const Labels& ly) {
  Shape sh;
  for (int l : ls) {
    int32_t d = 1;
    for (auto [x_or_y, lxy] : {std::pair{&x, &lx}, std::pair{&y, &ly}}) {
      auto it = std::find(lxy->begin(), lxy->end(), l);
      if (it != lxy->end()) {
        int32_t n = x_or_y->shape(it - lxy->begin());
        d = (d == 0 || n == 0) ? 0 : std::max(d, n);
      }
    }
    sh.push_back(d);
  }
  return sh;
}

std::vector<int> positions(const Labels& ls, const Labels& in) {
  std::vector<int> pos;
  for (int l : ls) {
    pos.push_back(std::find(in.begin(), in.end(), l) - in.begin());
  }
  return pos;
}

Shape concat(std::initializer_list<Shape> parts) {
  Shape out;
  for (auto& p : parts) {
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

int32_t numel(const Shape& sh) {
  return std::accumulate(sh.begin(), sh.end(), int32_t{1}, std::multiplies<>());
}

// Contracts a and b over their shared labels outside `result`: the shared labels inside it are
// batch dimensions, and the contracted ones are flattened into the K of one batched matmul.
array contract(const array& a, const Labels& la, const array& b, const Labels& lb, Labels& result,
               StreamOrDevice s) {
  Labels batch, afree, bfree, inner;
  for (int l : la) {
    (contains(lb, l) ? (contains(result, l) ? batch : inner) : afree).push_back(l);
  }
  for (int l : lb) {
    if (!contains(la, l)) {
      bfree.push_back(l);
    }
  }
  Shape bs = dims_of(batch, a, la, b, lb), as = dims_of(afree, a, la, b, lb),
        fs = dims_of(bfree, a, la, b, lb), ks = dims_of(inner, a, la, b, lb);
  result = batch;
  result.insert(result.end(), afree.begin(), afree.end());
  result.insert(result.end(), bfree.begin(), bfree.end());
  auto arranged = [&](const array& x, const Labels& lx,
                      std::initializer_list<const Labels*> order) {
    Labels perm_labels;
    for (auto* o : order) {
      perm_labels.insert(perm_labels.end(), o->begin(), o->end());
    }
    return transpose(x, positions(perm_labels, lx), s);
  };
  if (inner.empty()) {
    // No sum: a broadcast product (batch, afree, 1...) * (batch, 1..., bfree).
    array at = arranged(a, la, {&batch, &afree});
    array bt = arranged(b, lb, {&batch, &bfree});
    Shape ash = at.shape(), bsh(bt.shape().begin(), bt.shape().begin() + batch.size());
    ash.insert(ash.end(), bfree.size(), 1);
    bsh.insert(bsh.end(), afree.size(), 1);
    bsh.insert(bsh.end(), bt.shape().begin() + batch.size(), bt.shape().end());
    return multiply(reshape(at, ash, s), reshape(bt, bsh, s), s);
  }
  int32_t nb = numel(bs), m = numel(as), n = numel(fs), k = numel(ks);
  array at = broadcast_to(arranged(a, la, {&batch, &afree, &inner}), concat({bs, as, ks}), s);
  array bt = broadcast_to(arranged(b, lb, {&batch, &inner, &bfree}), concat({bs, ks, fs}), s);
  Shape ash = batch.empty() ? Shape{m, k} : Shape{nb, m, k};
  Shape bsh = batch.empty() ? Shape{k, n} : Shape{nb, k, n};
  return reshape(matmul(reshape(at, ash, s), reshape(bt, bsh, s), s), concat({bs, as, fs}), s);
}

char label_char(int l, const std::string& spare) {
  if (l < 26) {
    return 'A' + l;
  }
  return l < kLetters ? 'a' + (l - 26) : spare[l - kLetters];
}

std::string term_string(const Labels& ls, const std::string& spare) {
  std::string t;
  for (int l : ls) {
    t.push_back(label_char(l, spare));
  }
  return t;
}

// NumPy's FLOP estimate for combining `terms` over the labels `idx`.
double flops(const Labels& idx, bool inner, int n_terms, const std::vector<int64_t>& sizes) {
  return static_cast<double>(labels_size(idx, sizes)) *
         (std::max(1, n_terms - 1) + (inner ? 1 : 0));
}

}  // namespace

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(
    const std::string& subscripts, const std::vector<array>& operands) {
  Equation e = parse(subscripts, operands);
  auto steps = plan(e);
  // Broadcast dimensions print as letters that the subscripts do not use.
  std::string spare;
  for (int l = kLetters - 1; l >= 0 && static_cast<int>(spare.size()) < e.n_ellipsis; --l) {
    if (e.sizes[l] == -1) {
      spare.push_back(label_char(l, ""));
    }
  }
  if (static_cast<int>(spare.size()) < e.n_ellipsis) {
    spare.append(e.n_ellipsis - spare.size(), '.');
  }
  std::vector<std::string> terms;
  Labels all;
  for (auto& in : e.inputs) {
    terms.push_back(term_string(in, spare));
    for (int l : in) {
      if (!contains(all, l)) {
        all.push_back(l);
      }
    }
  }
  auto joined = [](const std::vector<std::string>& ts, const std::string& out) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i) {
      s += (i ? "," : "") + ts[i];
    }
    return s + "->" + out;
  };
  std::string out = term_string(e.output, spare);
  std::string complete = joined(terms, out);
  double optimized = 0;
  int64_t largest = 0;
  size_t scaling = 0;
  std::ostringstream rows;
  std::vector<std::vector<int>> path;
  std::vector<Labels> current = e.inputs;
  for (auto& st : steps) {
    Labels idx;
    std::vector<std::string> combined;
    for (int p : st.operands) {
      combined.push_back(terms[p]);
      for (int l : current[p]) {
        if (!contains(idx, l)) {
          idx.push_back(l);
        }
      }
    }
    optimized += flops(idx, idx.size() > st.result.size(), st.operands.size(), e.sizes);
    largest = std::max(largest, labels_size(st.result, e.sizes));
    scaling = std::max(scaling, idx.size());
    for (auto p = st.operands.rbegin(); p != st.operands.rend(); ++p) {
      terms.erase(terms.begin() + *p);
      current.erase(current.begin() + *p);
    }
    std::string result = terms.empty() ? out : term_string(st.result, spare);
    terms.push_back(result);
    current.push_back(st.result);
    rows << std::setw(4) << idx.size() << std::setw(30) << joined(combined, result) << "  "
         << std::setw(40) << joined(terms, out) << "\n";
    path.push_back(st.operands);
  }
  double naive = flops(all, all.size() > e.output.size(), e.inputs.size(), e.sizes);
  std::ostringstream info;
  std::string rule(76, '-');
  info << "  Complete contraction:  " << complete << "\n"
       << "         Naive scaling:  " << all.size() << "\n"
       << "     Optimized scaling:  " << scaling << "\n"
       << std::setprecision(3) << std::scientific << "      Naive FLOP count:  " << naive << "\n"
       << "  Optimized FLOP count:  " << optimized << "\n"
       << std::defaultfloat << std::setprecision(4)
       << "   Theoretical speedup:  " << (optimized > 0 ? naive / optimized : 1.0) << "\n"
       << std::setprecision(3) << std::scientific
       << "  Largest intermediate:  " << static_cast<double>(largest) << " elements\n"
       << rule << "\n"
       << std::setw(7) << "scaling" << std::setw(27) << "current"
       << "  " << std::setw(40) << "remaining"
       << "\n"
       << rule << "\n"
       << rows.str();
  return {path, info.str()};
}

array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s) {
  Equation e = parse(subscripts, operands);
  auto steps = plan(e);
  Dtype dtype = operands[0].dtype();
  for (auto& x : operands) {
    dtype = promote_types(dtype, x.dtype());
  }
  std::vector<array> xs;
  std::vector<Labels> ls;
  for (size_t k = 0; k < operands.size(); ++k) {
    Labels labels = e.inputs[k];
    xs.push_back(reduce_operand(operands[k], labels, needed_labels(e, k), s));
    ls.push_back(labels);
  }
  for (auto& st : steps) {
    if (st.operands.size() < 2) {
      continue;
    }
    int i = st.operands[0], j = st.operands[1];
    Labels result = st.result;
    array r = contract(xs[i], ls[i], xs[j], ls[j], result, s);
    xs.erase(xs.begin() + j);
    xs.erase(xs.begin() + i);
    ls.erase(ls.begin() + j);
    ls.erase(ls.begin() + i);
    xs.push_back(r);
    ls.push_back(result);
  }
  return astype(transpose(xs[0], positions(e.output, ls[0]), s), dtype, s);
}

}  // namespace mlx::core
