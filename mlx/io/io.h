// Saving and loading arrays: NumPy .npy and .npz, safetensors and GGUF.
//
// Loading checks every size and offset against the file first: a truncated or corrupt file
// gives std::runtime_error ("[load] Invalid .npy file 'x.npy': ..."), never a crash or an
// allocation the file cannot back. Bad arguments give std::invalid_argument. .safetensors and
// .gguf files opened by path load lazily: each array reads its bytes from the file when it is
// evaluated (straight into its buffer), so a checkpoint is never held twice and arrays that
// are never used are never read; a file changed after loading is an error at evaluation. From
// other readers (file-like objects, memory) they are read at once.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "mlx/array.h"
#include "mlx/io/stream.h"
#include "mlx/runtime/stream.h"

namespace mlx::core {

using SafetensorsLoad =
    std::pair<std::unordered_map<std::string, array>, std::unordered_map<std::string, std::string>>;

// .npy, one array. bfloat16, which NumPy lacks, is stored as 2-byte raw records ('<V2') and
// read back as bfloat16. Arrays already in Fortran order are written as such (like NumPy).
void save(std::shared_ptr<io::Writer> out_stream, array a);
// Appends ".npy" to `file` when it does not end with it.
void save(std::string file, array a);
// Reads NumPy format versions 1.0 to 3.0, C or Fortran order, little or big endian.
array load(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s = {});
array load(std::string file, StreamOrDevice s = {});

// .npz: a zip archive with one "<name>.npy" member per array, stored or deflated; zip64 is
// used when members or the archive pass 4 GiB. Names must be unique.
void savez(std::shared_ptr<io::Writer> out_stream,
           const std::vector<std::pair<std::string, array>>& arrays);
// Appends ".npz" to `file` when it does not end with it.
void savez(std::string file, const std::vector<std::pair<std::string, array>>& arrays);
void savez_compressed(std::shared_ptr<io::Writer> out_stream,
                      const std::vector<std::pair<std::string, array>>& arrays);
void savez_compressed(std::string file, const std::vector<std::pair<std::string, array>>& arrays);
// Member names without their ".npy" suffix, to arrays.
std::unordered_map<std::string, array> load_npz(std::shared_ptr<io::Reader> in_stream,
                                                StreamOrDevice s = {});
std::unordered_map<std::string, array> load_npz(const std::string& file, StreamOrDevice s = {});

// .safetensors: arrays by name plus a string-to-string metadata map.
SafetensorsLoad load_safetensors(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s = {});
SafetensorsLoad load_safetensors(const std::string& file, StreamOrDevice s = {});
void save_safetensors(std::shared_ptr<io::Writer> out_stream,
                      std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});
// Appends ".safetensors" to `file` when it does not end with it.
void save_safetensors(std::string file, std::unordered_map<std::string, array> arrays,
                      std::unordered_map<std::string, std::string> metadata = {});

// GGUF (version 2 and 3). Metadata values: an array (numbers and arrays of numbers; bools as
// bool arrays), a string, or a list of strings.
using GGUFMetaData = std::variant<std::monostate, array, std::string, std::vector<std::string>>;
using GGUFLoad = std::pair<std::unordered_map<std::string, array>,
                           std::unordered_map<std::string, GGUFMetaData>>;
// Unquantized tensors (F32, F16, BF16, F64, I8, I16, I32, I64) load as arrays of the same
// type; Q4_0, Q4_1 and Q8_0 tensors "<name>.weight" load in MLX's affine quantized layout
// (group size 32, 4 or 8 bits) as "<name>.weight" (uint32 codes), "<name>.scales" and
// "<name>.biases" (float16); Q5_0, Q5_1, Q4_K, Q5_K and Q6_K as float16; others: an error.
GGUFLoad load_gguf(std::shared_ptr<io::Reader> in_stream, StreamOrDevice s = {});
GGUFLoad load_gguf(const std::string& file, StreamOrDevice s = {});
// Appends ".gguf" to `file` when it does not end with it.
void save_gguf(std::shared_ptr<io::Writer> out_stream,
               std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata = {});
void save_gguf(std::string file, std::unordered_map<std::string, array> arrays,
               std::unordered_map<std::string, GGUFMetaData> metadata = {});

}  // namespace mlx::core
