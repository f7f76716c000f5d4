// Saving and loading: round trips of .npy, .npz and .safetensors for every dtype and layout,
// hand-made files (other versions, byte orders, zip64), and corrupt files, which must throw.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "mlx/io/npy.h"
#include "mlx/io/zip.h"
#include "tests/cpp/test_utils.h"

using namespace mlx::core;
using namespace mlx::core::test;
namespace fs = std::filesystem;

namespace {

// The bytes of `a` in row-major order: equal bytes means a bit-exact round trip.
std::string bytes_of(const array& a) {
  array c = contiguous(a);
  eval(c);
  return std::string(c.data<char>(), c.nbytes());
}

void expect_same(const array& got, const array& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(bytes_of(got), bytes_of(want));
}

array sample(const Shape& shape, Dtype t, uint32_t seed = 0) {
  // bool from [0, 2) rounds to a mix of False and True.
  return t == bool_ ? astype(random_array(shape, float32, 0, 2, seed) > array(1.0f), bool_)
                    : random_array(shape, t, -100, 100, seed);
}

const std::vector<Shape> kShapes = {{}, {0}, {1}, {7}, {2, 3, 4}, {3, 0, 2}, {1, 1, 5}};

std::string save_npy_bytes(const array& a) {
  auto w = std::make_shared<io::MemoryWriter>();
  save(w, a);
  return w->bytes();
}

array load_npy_bytes(std::string bytes) {
  return load(std::make_shared<io::MemoryReader>(std::move(bytes), "test.npy"));
}

std::string savez_bytes(const std::vector<std::pair<std::string, array>>& arrays, bool compressed) {
  auto w = std::make_shared<io::MemoryWriter>();
  compressed ? savez_compressed(w, arrays) : savez(w, arrays);
  return w->bytes();
}

std::unordered_map<std::string, array> load_npz_bytes(std::string bytes) {
  return load_npz(std::make_shared<io::MemoryReader>(std::move(bytes), "test.npz"));
}

std::string save_st_bytes(const std::unordered_map<std::string, array>& arrays,
                          const std::unordered_map<std::string, std::string>& metadata = {}) {
  auto w = std::make_shared<io::MemoryWriter>();
  save_safetensors(w, arrays, metadata);
  return w->bytes();
}

SafetensorsLoad load_st_bytes(std::string bytes) {
  return load_safetensors(std::make_shared<io::MemoryReader>(std::move(bytes), "test.st"));
}

// An .npy file with header dict `dict` (padded as NumPy does) followed by `data`.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  io::detail::put_le(out, h.size(), major == 1 ? 2 : 4);
  return out + h + data;
}

std::string safetensors_file(const std::string& json, const std::string& data) {
  std::string out;
  io::detail::put_le(out, json.size(), 8);
  return out + json + data;
}

template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

// Runs `load_fn`, which must either succeed or throw std::runtime_error (never another
// exception type: out_of_memory or length_error would mean an allocation the file
// cannot back).
template <typename F>
::testing::AssertionResult loads_or_fails_cleanly(F&& load_fn) {
  try {
    load_fn();
  } catch (const std::runtime_error&) {
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "unexpected exception type: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

class IOTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mlx_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// --- .npy ---------------------------------------------------------------------------------

TEST_F(IOTest, NpyRoundTripEveryDtypeAndShape) {
  for (auto t : kAllDtypes) {
    for (size_t i = 0; i < kShapes.size(); ++i) {
      SCOPED_TRACE(dtype_name(t) + " " + to_string(kShapes[i]));
      array a = sample(kShapes[i], t, static_cast<uint32_t>(i));
      expect_same(load_npy_bytes(save_npy_bytes(a)), a);
      std::string file = path("a_" + dtype_name(t) + std::to_string(i) + ".npy");
      save(file, a);
      expect_same(load(file), a);
    }
  }
}

TEST_F(IOTest, NpyHeaderMatchesNumPy) {
  std::string b = save_npy_bytes(zeros({2, 3}, float32));
  ASSERT_EQ(b.size(), 128u + 24u);
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(io::detail::get_u16(b.data() + 8), 118);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(b.substr(10, dict.size()), dict);
  EXPECT_EQ(b[127], '\n');
  EXPECT_NE(save_npy_bytes(zeros({5}, int8)).find("'descr': '|i1'"), std::string::npos);
  EXPECT_NE(save_npy_bytes(zeros({5}, bool_)).find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(save_npy_bytes(zeros({5}, complex64)).find("'descr': '<c8'"), std::string::npos);
  EXPECT_NE(save_npy_bytes(zeros({5}, bfloat16)).find("'descr': '<V2'"), std::string::npos);
  EXPECT_NE(save_npy_bytes(zeros({5})).find("'shape': (5,)"), std::string::npos);
  EXPECT_NE(save_npy_bytes(array(1.0f)).find("'shape': ()"), std::string::npos);
}

TEST_F(IOTest, NpySavesAnyLayout) {
  array base = sample({6, 8}, float32);
  array t = transpose(base);
  // Transposed arrays are written in Fortran order without a copy, as NumPy does.
  std::string tb = save_npy_bytes(t);
  EXPECT_NE(tb.find("'fortran_order': True, 'shape': (8, 6)"), std::string::npos);
  array lt = load_npy_bytes(tb);
  eval(lt);
  EXPECT_TRUE(lt.flags().col_contiguous);
  EXPECT_FALSE(lt.flags().row_contiguous);
  expect_same(lt, t);
  std::vector<array> views = {slice(base, {1, 0}, {6, 8}, {2, 3}),
                              slice(base, {5, 7}, {-7, -9}, {-1, -2}),
                              broadcast_to(array({1.0f, 2.0f, 3.0f}), {4, 3}),
                              transpose(reshape(base, {2, 3, 8}), {1, 0, 2})};
  for (auto& v : views) {
    std::string b = save_npy_bytes(v);
    EXPECT_NE(b.find("'fortran_order': False"), std::string::npos);
    expect_same(load_npy_bytes(b), v);
  }
}

TEST_F(IOTest, NpyLargeArrayThroughFile) {
  // 72 MiB: the file reader splits this read across threads.
  array a = astype(arange(18 * (1 << 20)), float32);
  save(path("big"), a);
  ASSERT_TRUE(fs::exists(path("big.npy")));
  expect_same(load(path("big.npy")), a);
}

TEST_F(IOTest, NpyReadsOtherVersionsAndOrders) {
  std::string data = raw<int32_t>({1, 2, 3, 4, 5, 6});
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  array want = array({1, 2, 3, 4, 5, 6}, {2, 3});
  for (int major : {1, 2, 3}) {
    expect_same(load_npy_bytes(npy_file(dict, data, major)), want);
  }
  // Fortran order: the same bytes are the columns.
  array f =
      load_npy_bytes(npy_file("{'descr': '<i4', 'fortran_order': True, 'shape': (3, 2), }", data));
  expect_same(f, array({1, 4, 2, 5, 3, 6}, {3, 2}));
  // Keys in another order, double quotes, no spaces, Python 2 longs, trailing bytes.
  expect_same(
      load_npy_bytes(npy_file("{\"shape\":(2L,3L),\"fortran_order\":False,\"descr\":\"<i4\"}",
                              data + "trailing")),
      want);
  // Big endian, including complex numbers.
  std::string be;
  for (uint32_t v : {1u, 2u}) {
    for (int i = 3; i >= 0; --i) {
      be.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
  }
  expect_same(
      load_npy_bytes(npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be)),
      array({1, 2}));
  std::string be_c = raw<float>({1.5f, -2.0f});
  for (size_t i = 0; i < be_c.size(); i += 4) {
    std::reverse(be_c.begin() + i, be_c.begin() + i + 4);
  }
  array c =
      load_npy_bytes(npy_file("{'descr': '>c8', 'fortran_order': False, 'shape': (), }", be_c));
  EXPECT_EQ(c.item<complex64_t>(), complex64_t(1.5f, -2.0f));
  // Any nonzero byte is True.
  array b = load_npy_bytes(npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                    std::string("\x00\x02\xff", 3)));
  EXPECT_EQ(bytes_of(b), std::string("\x00\x01\x01", 3));
}

TEST_F(IOTest, NpyRejectsBadHeaders) {
  std::string data = raw<float>({1, 2, 3, 4});
  auto bad = [&](const std::string& dict, const std::string& expected, const std::string& d = "") {
    SCOPED_TRACE(dict);
    try {
      load_npy_bytes(npy_file(dict, d.empty() ? data : d));
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("[load] Invalid .npy file 'test.npy'"), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", "negative dimension");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3000000000,), }", "larger than");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647, "
      "2147483647, 2147483647), }",
      "more than 2^64");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", "needs 20 bytes");
  bad("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype '<c16'");
  bad("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype");
  bad("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", "unsupported dtype");
  bad("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured");
  bad("{'descr': '<f4', 'shape': (4,), }", "no 'fortran_order'");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", "unexpected key");
  bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (4,)}", "duplicate");
  bad("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", "True or False");
  bad("{'descr': '<f4, 'fortran_order': False, 'shape': (4,), }", "unsupported dtype '<f4, '");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } junk", "after the header");
  bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4", "expected ')'");
  bad("['descr']", "expected '{'");

  auto fails = [&](std::string bytes, const std::string& expected) {
    try {
      load_npy_bytes(std::move(bytes));
      ADD_FAILURE() << "no exception for " << expected;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  std::string good = save_npy_bytes(array({1.0f, 2.0f}));
  fails("", "too short");
  fails("NUMPY\x01\x00\x10\x00" + std::string(16, ' '), "magic");
  std::string v4 = good;
  v4[6] = 4;
  fails(v4, "version 4.0");
  std::string v11 = good;
  v11[7] = 1;
  fails(v11, "version 1.1");
  std::string long_header = good;
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  fails(long_header, "header length 65535 exceeds");
}

TEST_F(IOTest, NpyTruncatedAtEveryOffsetThrows) {
  for (auto t : {float32, bool_, complex64}) {
    std::string b = save_npy_bytes(sample({3, 5}, t));
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_THROW(load_npy_bytes(b.substr(0, n)), std::runtime_error) << n;
    }
  }
}

TEST_F(IOTest, NpyCorruptHeaderBytesNeverCrash) {
  std::string b = save_npy_bytes(sample({3, 5}, float32));
  for (size_t i = 0; i < 128; ++i) {
    for (int v : {0x00, 0x01, 0x80, 0xff, int('9'), int(' '), int('('), int('\''), int('-')}) {
      std::string c = b;
      c[i] = static_cast<char>(v);
      EXPECT_TRUE(loads_or_fails_cleanly([&] { load_npy_bytes(c); })) << i << " " << int(v);
    }
  }
}

// --- .npz ---------------------------------------------------------------------------------

TEST_F(IOTest, NpzRoundTripEveryDtype) {
  for (bool compressed : {false, true}) {
    std::vector<std::pair<std::string, array>> arrays;
    for (auto t : kAllDtypes) {
      for (size_t i = 0; i < kShapes.size(); ++i) {
        arrays.emplace_back(dtype_name(t) + "_" + std::to_string(i),
                            sample(kShapes[i], t, static_cast<uint32_t>(i)));
      }
    }
    arrays.emplace_back("transposed", transpose(sample({4, 5}, float32)));
    arrays.emplace_back("dir/with space.x", slice(sample({10}, int32), {9}, {-11}, {-3}));
    std::string file = path(compressed ? "c" : "u");
    compressed ? savez_compressed(file, arrays) : savez(file, arrays);
    auto loaded = load_npz(file + ".npz");
    ASSERT_EQ(loaded.size(), arrays.size());
    for (auto& [name, a] : arrays) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(loaded.count(name));
      expect_same(loaded.at(name), a);
    }
    expect_same(load_npz_bytes(savez_bytes(arrays, compressed)).at("transposed"),
                arrays[arrays.size() - 2].second);
  }
}

TEST_F(IOTest, NpzCompressesAndIsDeterministic) {
  std::vector<std::pair<std::string, array>> arrays = {{"z", zeros({1 << 16})}};
  std::string stored = savez_bytes(arrays, false);
  std::string deflated = savez_bytes(arrays, true);
  EXPECT_GT(stored.size(), size_t(1) << 18);
  EXPECT_LT(deflated.size(), 4096u);
  EXPECT_EQ(deflated, savez_bytes(arrays, true));
  expect_same(load_npz_bytes(deflated).at("z"), arrays[0].second);
  // An empty archive is valid.
  EXPECT_TRUE(load_npz_bytes(savez_bytes({}, true)).empty());
}

TEST_F(IOTest, NpzZip64) {
  // Writing with a zero limit puts every size and offset in zip64 records, as 4 GiB would.
  std::vector<std::pair<std::string, array>> arrays = {
      {"a", sample({3, 4}, float32)}, {"b", sample({0}, int8)}, {"c", sample({}, complex64)}};
  for (bool compressed : {false, true}) {
    io::MemoryWriter w;
    io::detail::write_npz(w, arrays, compressed, "savez", /* zip64_limit = */ 0);
    const std::string& b = w.bytes();
    EXPECT_NE(b.find(std::string("PK\x06\x06", 4)), std::string::npos);
    EXPECT_NE(b.find(std::string("PK\x06\x07", 4)), std::string::npos);
    auto loaded = load_npz_bytes(b);
    for (auto& [name, a] : arrays) {
      expect_same(loaded.at(name), a);
    }
  }
}

TEST_F(IOTest, NpzRejectsDuplicateNames) {
  EXPECT_THROW(savez(path("d"), {{"a", zeros({1})}, {"a", zeros({2})}}), std::invalid_argument);
  // The same name with and without ".npy" in an archive.
  io::MemoryWriter w;
  io::detail::ZipWriter zip(w);
  std::string npy = save_npy_bytes(zeros({1}));
  zip.add("a.npy", {npy}, false);
  zip.add("a", {npy}, false);
  zip.finish();
  EXPECT_THROW(load_npz_bytes(w.bytes()), std::runtime_error);
}

TEST_F(IOTest, NpzTruncatedAtEveryOffsetThrows) {
  std::vector<std::pair<std::string, array>> arrays = {{"a", sample({3, 5}, float32)},
                                                       {"b", sample({4}, int16)}};
  for (bool compressed : {false, true}) {
    std::string b = savez_bytes(arrays, compressed);
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_THROW(load_npz_bytes(b.substr(0, n)), std::runtime_error) << n;
    }
  }
}

TEST_F(IOTest, NpzCorruptBytesNeverCrash) {
  std::vector<std::pair<std::string, array>> arrays = {{"a", sample({3, 5}, float32)},
                                                       {"b", sample({4}, bool_)}};
  for (bool compressed : {false, true}) {
    std::string b = savez_bytes(arrays, compressed);
    int failures = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      for (int v : {0x00, 0x01, 0x7f, 0xff}) {
        std::string c = b;
        if (c[i] == static_cast<char>(v)) {
          continue;
        }
        c[i] = static_cast<char>(v);
        bool threw = false;
        EXPECT_TRUE(loads_or_fails_cleanly([&] {
          try {
            load_npz_bytes(c);
          } catch (const std::runtime_error&) {
            threw = true;
            throw;
          }
        })) << i;
        failures += threw;
      }
    }
    // The CRC-32 catches every changed data byte, so most changes must be detected.
    EXPECT_GT(failures, static_cast<int>(b.size()) * 2);
  }
}

// Patches the first central directory record of an archive made by savez.
std::string patch_central(std::string b, size_t field, uint64_t value, int bytes) {
  size_t cd = b.find(std::string("PK\x01\x02", 4));
  std::string v;
  io::detail::put_le(v, value, bytes);
  b.replace(cd + field, bytes, v);
  return b;
}

TEST_F(IOTest, NpzRejectsCorruptArchives) {
  std::vector<std::pair<std::string, array>> arrays = {{"a", sample({3, 5}, float32)}};
  std::string stored = savez_bytes(arrays, false);
  std::string deflated = savez_bytes(arrays, true);
  auto fails = [](const std::string& b, const std::string& expected) {
    try {
      load_npz_bytes(b);
      ADD_FAILURE() << "no exception for " << expected;
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("[load] Invalid .npz file 'test.npz'"), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  fails("not a zip archive at all, just some text", "end-of-central-directory");
  fails(patch_central(stored, 42, 1u << 30, 4), "local header outside the file");
  fails(patch_central(stored, 10, 12, 2), "unsupported compression method 12");
  fails(patch_central(stored, 8, 1, 2), "encrypted");
  fails(patch_central(stored, 16, 0xdeadbeef, 4), "CRC-32 mismatch");
  fails(patch_central(stored, 20, 1000, 4), "different compressed and uncompressed sizes");
  fails(patch_central(patch_central(stored, 20, 1u << 20, 4), 24, 1u << 20, 4),
        "data outside the file");
  // A decompression bomb: a tiny deflate stream claiming 4 GiB is refused before inflating.
  fails(patch_central(deflated, 24, 0xFFFFFFF0u, 4), "more than deflate can produce");
  // Declared sizes that disagree with the stream in either direction.
  size_t real = 128 + 60;
  fails(patch_central(deflated, 24, real - 4, 4), "needs 60 bytes");
  fails(patch_central(deflated, 24, real + 4, 4), "needs 60 bytes");
  // The central directory pointing past the end of the file, or claiming too many entries.
  size_t eocd = stored.rfind(std::string("PK\x05\x06", 4));
  std::string far = stored;
  far[eocd + 19] = '\x7f';
  fails(far, "central directory");
  std::string many = stored;
  many[eocd + 10] = '\xff';
  many[eocd + 11] = '\x7f';
  fails(many, "cannot hold");
}

TEST_F(IOTest, NpzRejectsCorruptDeflateStream) {
  std::string b = savez_bytes({{"a", zeros({256})}}, true);
  size_t data = 30 + 5;  // local header and the name "a.npy"
  for (size_t i = data; i < data + 8; ++i) {
    std::string c = b;
    c[i] = static_cast<char>(~c[i]);
    EXPECT_THROW(load_npz_bytes(c), std::runtime_error);
  }
}

// --- .safetensors -------------------------------------------------------------------------

TEST_F(IOTest, SafetensorsRoundTripEveryDtype) {
  std::unordered_map<std::string, array> arrays;
  for (auto t : kAllDtypes) {
    for (size_t i = 0; i < kShapes.size(); ++i) {
      arrays.emplace(dtype_name(t) + "." + std::to_string(i),
                     sample(kShapes[i], t, static_cast<uint32_t>(i)));
    }
  }
  arrays.emplace("transposed", transpose(sample({3, 4}, float16)));
  arrays.emplace("quote\" back\\slash \n \xc3\xa9", sample({2}, int32));
  std::unordered_map<std::string, std::string> metadata = {{"format", "mlx"},
                                                           {"note", "a \"quoted\"\tvalue"}};
  save_safetensors(path("m"), arrays, metadata);
  auto [loaded, meta] = load_safetensors(path("m.safetensors"));
  EXPECT_EQ(meta, metadata);
  ASSERT_EQ(loaded.size(), arrays.size());
  for (auto& [name, a] : arrays) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(loaded.count(name));
    expect_same(loaded.at(name), a);
  }
  // The header is padded to 8 bytes and the result does not depend on hash order.
  std::string b = save_st_bytes(arrays, metadata);
  EXPECT_EQ(io::detail::get_u64(b.data()) % 8, 0u);
  EXPECT_EQ(b, save_st_bytes(std::unordered_map<std::string, array>(arrays.begin(), arrays.end()),
                             metadata));
  EXPECT_TRUE(load_st_bytes(save_st_bytes({})).first.empty());
}

TEST_F(IOTest, SafetensorsReadsHandWrittenHeaders) {
  std::string data = raw<float>({1, 2, 3, 4}) + raw<uint16_t>({7});
  auto [a, meta] = load_st_bytes(safetensors_file(
      " { \"y\" : {\"shape\": [], \"dtype\": \"U16\", \"data_offsets\": [16, 18], \"extra\": null},"
      "\n\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
      "\"__metadata__\":{\"k\\u00e9\\ud83d\\ude00\":\"v\\n\"}}  ",
      data));
  expect_same(a.at("x"), array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2}));
  expect_same(a.at("y"), array(uint16_t(7)));
  EXPECT_EQ(meta.at("k\xc3\xa9\xf0\x9f\x98\x80"), "v\n");
}

TEST_F(IOTest, SafetensorsRejectsBadFiles) {
  std::string data = raw<float>({1, 2, 3, 4});
  auto fails = [](const std::string& b, const std::string& expected) {
    try {
      load_st_bytes(b);
      ADD_FAILURE() << "no exception for " << expected;
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("[load_safetensors] Invalid .safetensors file 'test.st'"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  };
  auto tensor = [&](const std::string& fields) {
    return safetensors_file("{\"x\":{" + fields + "}}", data);
  };
  fails("", "too short");
  fails(std::string("\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), "header length");
  fails(safetensors_file("{", ""), "malformed JSON");
  fails(safetensors_file("[]", ""), "not a JSON object");
  fails(safetensors_file(std::string(100000, '[') + std::string(100000, ']'), ""), "nested deeper");
  fails(safetensors_file("{\"a\":1,\"a\":2}", ""), "duplicate key");
  fails(safetensors_file("{\"\xff\":1}", ""), "invalid UTF-8");
  fails(safetensors_file("{\"\\ud800\":1}", ""), "unpaired surrogate");
  fails(safetensors_file("{\"__metadata__\":{\"a\":1}}", ""), "not a string");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,20]"), "outside");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[8,4]"), "outside");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]"), "does not match");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]"), "non-negative integer");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[4.0],\"data_offsets\":[0,16]"), "non-negative");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[99999999999999999999999],\"data_offsets\":[0,16]"),
        "too large");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[4294967296],\"data_offsets\":[0,16]"), "larger than");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[2147483647,2147483647,2147483647],"
               "\"data_offsets\":[0,16]"),
        "does not match");
  fails(tensor("\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]"), "unsupported dtype");
  fails(tensor("\"dtype\":\"F32\",\"data_offsets\":[0,16]"), "no shape");
  fails(tensor("\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]"), "no data_offsets");
  fails(tensor("\"shape\":[4],\"data_offsets\":[0,16]"), "no dtype");
}

TEST_F(IOTest, SafetensorsTruncatedOrCorruptNeverCrashes) {
  std::string b =
      save_st_bytes({{"a", sample({3, 5}, float32)}, {"b", sample({2}, bool_)}}, {{"k", "v"}});
  uint64_t header_end = 8 + io::detail::get_u64(b.data());
  for (size_t n = 0; n < b.size(); ++n) {
    EXPECT_THROW(load_st_bytes(b.substr(0, n)), std::runtime_error) << n;
  }
  for (size_t i = 0; i < header_end; ++i) {
    for (int v : {0x00, 0xff, int('9'), int('"'), int('['), int('-'), int(' ')}) {
      std::string c = b;
      c[i] = static_cast<char>(v);
      EXPECT_TRUE(loads_or_fails_cleanly([&] { load_st_bytes(c); })) << i;
    }
  }
}

TEST_F(IOTest, SafetensorsRejectsBadArguments) {
  EXPECT_THROW(save_safetensors(path("x"), {{"__metadata__", zeros({1})}}), std::invalid_argument);
}

// --- files and streams --------------------------------------------------------------------

TEST_F(IOTest, FileErrorsNameTheFile) {
  auto expect_message = [](auto&& f, const std::string& op, const std::string& name) {
    try {
      f();
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      EXPECT_EQ(what.rfind("[" + op + "]", 0), 0u) << what;
      EXPECT_NE(what.find(name), std::string::npos) << what;
    }
  };
  std::string missing = path("missing.npy");
  expect_message([&] { load(missing); }, "load", missing);
  expect_message([&] { load_npz(missing); }, "load", missing);
  expect_message([&] { load_safetensors(missing); }, "load_safetensors", missing);
  expect_message([&] { load(dir_.string()); }, "load", "directory");
  std::string no_dir = path("no/such/dir/x.npy");
  expect_message([&] { save(no_dir, zeros({1})); }, "save", no_dir);
  expect_message([&] { savez(path("no/such/x.npz"), {}); }, "savez", "x.npz");
  expect_message([&] { save_safetensors(path("no/x"), {}); }, "save_safetensors", "x.safetensors");
  EXPECT_THROW(load(std::shared_ptr<io::Reader>()), std::invalid_argument);
  EXPECT_THROW(save(std::shared_ptr<io::Writer>(), zeros({1})), std::invalid_argument);
  // A file that shrinks after opening.
  std::string f = path("shrinks.npy");
  save(f, zeros({100}));
  auto reader = std::make_shared<io::FileReader>(f);
  fs::resize_file(f, 100);
  EXPECT_THROW(load(reader), std::runtime_error);
}

TEST_F(IOTest, ExtensionsAreAppendedOnlyWhenMissing) {
  save(path("a"), zeros({1}));
  save(path("b.npy"), zeros({1}));
  savez(path("c"), {{"x", zeros({1})}});
  savez_compressed(path("d.npz"), {{"x", zeros({1})}});
  save_safetensors(path("e"), {{"x", zeros({1})}});
  for (auto name : {"a.npy", "b.npy", "c.npz", "d.npz", "e.safetensors"}) {
    EXPECT_TRUE(fs::exists(path(name))) << name;
  }
  EXPECT_FALSE(fs::exists(path("b.npy.npy")));
}

TEST_F(IOTest, SaveEvaluatesLazyArrays) {
  array a = astype(arange(10), float32) * array(2.0f);
  save(path("lazy"), a);
  expect_close(load(path("lazy.npy")), {0, 2, 4, 6, 8, 10, 12, 14, 16, 18});
}

}  // namespace
