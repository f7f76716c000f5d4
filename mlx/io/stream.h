// Byte sources and sinks the file formats read from and write to: files, memory, and (in the
// Python package) file-like objects.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace mlx::core::io {

// Random-access input. Every read is positioned so that one reader can serve formats that
// look at the end first (zip) and loaders that read several regions in parallel.
class Reader {
 public:
  virtual ~Reader() = default;
  // Total number of bytes that can be read.
  virtual uint64_t size() = 0;
  // Reads exactly `n` bytes starting at byte `offset`; throws std::runtime_error when the
  // input ends before (or fails).
  virtual void read(char* data, size_t n, uint64_t offset) = 0;
  // Names the input in error messages (the path for files).
  virtual std::string label() const = 0;
};

// Sequential output.
class Writer {
 public:
  virtual ~Writer() = default;
  // Appends `n` bytes; throws std::runtime_error on failure.
  virtual void write(const char* data, size_t n) = 0;
  // Pushes buffered bytes out and reports errors deferred until then (a full disk).
  virtual void flush() {}
  virtual std::string label() const = 0;
};

// A file opened for reading; large reads run in parallel. Throws std::runtime_error when the
// file cannot be opened (naming it and the system's reason).
class FileReader : public Reader {
 public:
  explicit FileReader(std::string path);
  ~FileReader() override;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  uint64_t size() override { return size_; }
  void read(char* data, size_t n, uint64_t offset) override;
  std::string label() const override { return path_; }
  // Whether the file still has the size and modification time it had when opened (lazy
  // loads check this before reading).
  bool unchanged() const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  int64_t mtime_ns_ = 0;
};

// A file created (or truncated) for writing.
class FileWriter : public Writer {
 public:
  explicit FileWriter(std::string path);
  ~FileWriter() override;
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;
  void write(const char* data, size_t n) override;
  void flush() override;
  std::string label() const override { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Reads bytes held in memory (shared between copies of the reader).
class MemoryReader : public Reader {
 public:
  explicit MemoryReader(std::string bytes, std::string label = "<memory>")
      : bytes_(std::make_shared<const std::string>(std::move(bytes))), label_(std::move(label)) {}
  uint64_t size() override { return bytes_->size(); }
  void read(char* data, size_t n, uint64_t offset) override;
  std::string label() const override { return label_; }

 private:
  std::shared_ptr<const std::string> bytes_;
  std::string label_;
};

// Collects what is written in memory.
class MemoryWriter : public Writer {
 public:
  explicit MemoryWriter(std::string label = "<memory>") : label_(std::move(label)) {}
  void write(const char* data, size_t n) override { bytes_.append(data, n); }
  std::string label() const override { return label_; }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  std::string label_;
};

}  // namespace mlx::core::io
