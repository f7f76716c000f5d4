// The GPU's fused kernels built by NVRTC, without a GPU: the generated sources of representative
// regions compile against the library's embedded headers and the toolkit found at run time, so
// a missing header or a wrong option fails here; a bad source is a failed build with NVRTC's
// log. Prints each build's time; with MLX_TEST_NVCC=<nvcc> it also times the same sources
// through nvcc (what built them before NVRTC did). CUDA builds only.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "mlx/backend/cuda/compiled_source.h"
#include "mlx/backend/cuda/nvrtc.h"
#include "mlx/mlx.h"
#include "mlx/primitives/reduction.h"

namespace mlx::core::test {
namespace {

constexpr int kArch = 90;  // Hopper; NVRTC needs no GPU to target it

FusedOp unary(UnaryOp op, Dtype t, int a) {
  return {FusedOp::Kind::unary, static_cast<int>(op), t, {a, -1, -1}};
}
FusedOp binary(BinaryOp op, Dtype t, int a, int b) {
  return {FusedOp::Kind::binary, static_cast<int>(op), t, {a, b, -1}};
}
FusedOp cast(Dtype t, int a) { return {FusedOp::Kind::cast, 0, t, {a, -1, -1}}; }

struct Region {
  std::string label, access;
  std::shared_ptr<Compiled> c;
};

// nn.gelu on bfloat16: x * (1 + erf(x * 1/sqrt(2))) * 0.5 in float32, from and back to bfloat16.
Region gelu() {
  auto s = default_stream(Device::cpu);
  using B = BinaryOp;
  return {"GELU (bfloat16, 7 ops)", "dsss",
          std::make_shared<Compiled>(
              s, std::vector<Dtype>{bfloat16, float32, float32, float32},
              std::vector<FusedOp>{cast(float32, 0), binary(B::Multiply, float32, 4, 1),
                                   unary(UnaryOp::Erf, float32, 5), binary(B::Add, float32, 6, 2),
                                   binary(B::Multiply, float32, 4, 7),
                                   binary(B::Multiply, float32, 8, 3), cast(bfloat16, 9)},
              std::vector<int>{10})};
}

// An AdamW step: parameter, gradient (read through strides), moments; learning rate, betas,
// epsilon and the decay factor as scalars. 13 ops, three outputs.
Region adamw() {
  auto s = default_stream(Device::cpu);
  using B = BinaryOp;
  using U = UnaryOp;
  const Dtype f = float32;
  // Values: 0 p, 1 g, 2 m, 3 v, 4 lr, 5 b1, 6 1-b1, 7 b2, 8 1-b2, 9 eps, 10 1-lr*wd.
  std::vector<FusedOp> ops = {
      binary(B::Multiply, f, 5, 2),    // 11 b1 m
      binary(B::Multiply, f, 6, 1),    // 12 (1-b1) g
      binary(B::Add, f, 11, 12),       // 13 m'
      binary(B::Multiply, f, 7, 3),    // 14 b2 v
      unary(U::Square, f, 1),          // 15 g^2
      binary(B::Multiply, f, 8, 15),   // 16 (1-b2) g^2
      binary(B::Add, f, 14, 16),       // 17 v'
      unary(U::Sqrt, f, 17),           // 18
      binary(B::Add, f, 18, 9),        // 19
      binary(B::Divide, f, 13, 19),    // 20 update
      binary(B::Multiply, f, 0, 10),   // 21 decayed p
      binary(B::Multiply, f, 4, 20),   // 22 lr update
      binary(B::Subtract, f, 21, 22),  // 23 p'
  };
  return {
      "AdamW (float32, 13 ops)", "dgddsssssss",
      std::make_shared<Compiled>(s, std::vector<Dtype>(11, f), ops, std::vector<int>{23, 13, 17})};
}

// softmax's sum(exp(x - max)) over the last axis, also outputting the exponentials.
Region softmax_sum() {
  auto s = default_stream(Device::cpu);
  return {"softmax exp + row sum (reduction)", "dg",
          std::make_shared<Compiled>(s, std::vector<Dtype>{float32, float32},
                                     std::vector<FusedOp>{binary(BinaryOp::Subtract, float32, 0, 1),
                                                          unary(UnaryOp::Exp, float32, 2)},
                                     std::vector<int>{3}, FusedReduction{Reduce::Sum, 3, {1}})};
}

// Integers, a comparison, a select, float16 and complex64: the other corners of the headers.
Region mixed() {
  auto s = default_stream(Device::cpu);
  return {"int32 / bool / float16 / complex64 (6 ops)", "dds",
          std::make_shared<Compiled>(s, std::vector<Dtype>{int32, int32, float16},
                                     std::vector<FusedOp>{
                                         binary(BinaryOp::Greater, bool_, 0, 1),
                                         {FusedOp::Kind::select, 0, int32, {3, 0, 1}},
                                         cast(float16, 4),
                                         binary(BinaryOp::Multiply, float16, 5, 2),
                                         cast(complex64, 6),
                                         binary(BinaryOp::Multiply, complex64, 7, 7),
                                     },
                                     std::vector<int>{4, 8})};
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class FusedKernelsNvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cu::nvrtc_fingerprint().empty() || cu::nvrtc_toolkit_include().empty()) {
      GTEST_SKIP() << "no NVRTC or CUDA toolkit headers here";
    }
    char dir[] = "/tmp/mlx_nvrtc_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      std::system(("rm -rf " + dir_).c_str());
    }
  }

  // Builds the region's kernel into a file (what JitCache's builder does) and returns the
  // seconds it took.
  double build(const Region& r, const std::string& name) {
    const std::string out = dir_ + "/" + name + ".cubin";
    const std::string src =
        cu::fused_kernel_prelude() + cu::fused_kernel_source(*r.c, r.access, name, kArch);
    auto start = std::chrono::steady_clock::now();
    std::optional<std::string> error = cu::build_fused_kernel(src, out, kArch);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(error.has_value()) << r.label << ":\n" << src << "\n" << error.value_or("");
    EXPECT_EQ(read_file(out).substr(0, 4),
              "\x7f"
              "ELF")
        << r.label;
    return seconds;
  }

  std::string dir_;
};

TEST_F(FusedKernelsNvrtc, RepresentativeRegionsCompile) {
  int k = 0;
  for (const Region& r : {gelu(), adamw(), softmax_sum(), mixed()}) {
    double seconds = build(r, "mlx_fused_" + std::to_string(k++));
    std::printf("[nvrtc] %-45s %.3f s%s\n", r.label.c_str(), seconds,
                k == 1 ? " (first in the process: parses the headers)" : "");
  }
}

TEST_F(FusedKernelsNvrtc, ABadSourceIsAFailedBuildWithTheLog) {
  std::optional<std::string> error = cu::build_fused_kernel(
      cu::fused_kernel_prelude() + "extern \"C\" __global__ void k() { undeclared(); }\n",
      dir_ + "/bad.cubin", kArch);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("undeclared"), std::string::npos) << *error;
}

// The same sources through nvcc as a command, with the flags and the source tree's headers the
// build used before NVRTC: MLX_TEST_NVCC=/usr/local/cuda/bin/nvcc.
TEST_F(FusedKernelsNvrtc, LatencyAgainstNvcc) {
  const char* nvcc = std::getenv("MLX_TEST_NVCC");
  if (!nvcc) {
    GTEST_SKIP() << "set MLX_TEST_NVCC to an nvcc to compare";
  }
  int k = 0;
  for (const Region& r : {gelu(), adamw(), softmax_sum(), mixed()}) {
    const std::string name = "mlx_nvcc_" + std::to_string(k++);
    const std::string src = dir_ + "/" + name + ".cu";
    std::ofstream(src) << cu::fused_kernel_prelude()
                       << cu::fused_kernel_source(*r.c, r.access, name, kArch);
    const std::string cmd = std::string(nvcc) +
                            " -std=c++20 -O3 --expt-relaxed-constexpr -cubin -arch=sm_" +
                            std::to_string(kArch) + " -I" + MLX_SOURCE_DIR + " -o " + dir_ + "/" +
                            name + ".cubin " + src;
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::printf("[nvcc]  %-45s %.3f s\n", r.label.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

}  // namespace
}  // namespace mlx::core::test
