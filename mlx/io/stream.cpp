#include "mlx/io/stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mlx::core::io {

namespace {

std::runtime_error system_error(const std::string& what, const std::string& path, int err) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(err) + ".");
}

void check_range(uint64_t n, uint64_t offset, uint64_t size, const std::string& label) {
  if (n > size || offset > size - n) {
    throw std::runtime_error("Unexpected end of '" + label + "': reading " + std::to_string(n) +
                             " bytes at offset " + std::to_string(offset) + " of " +
                             std::to_string(size) + ".");
  }
}

// Reads that are worth splitting across threads (page faults on fresh buffers dominate).
constexpr size_t kParallelRead = size_t(64) << 20;
constexpr size_t kReadChunk = size_t(16) << 20;

}  // namespace

FileReader::FileReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    throw system_error("Failed to open file", path_, errno);
  }
  struct stat st;
  int err = ::fstat(fd_, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
  if (err == 0 && !S_ISREG(st.st_mode)) {
    err = EINVAL;  // pipes and devices have no size to check the headers against
  }
  if (err != 0) {
    ::close(fd_);
    fd_ = -1;
    throw system_error("Cannot read", path_, err);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

bool FileReader::unchanged() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    return false;
  }
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return static_cast<uint64_t>(st.st_size) == size_ && mtime == mtime_ns_;
}

FileReader::~FileReader() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void FileReader::read(char* data, size_t n, uint64_t offset) {
  check_range(n, offset, size_, path_);
  auto read_span = [&](char* dst, size_t len, uint64_t off) {
    while (len > 0) {
      ssize_t got = ::pread(fd_, dst, len, static_cast<off_t>(off));
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got < 0) {
        throw system_error("Failed to read", path_, errno);
      }
      if (got == 0) {
        throw std::runtime_error("Unexpected end of '" + path_ + "' (did the file shrink?).");
      }
      dst += got;
      len -= static_cast<size_t>(got);
      off += static_cast<uint64_t>(got);
    }
  };
  if (n < kParallelRead) {
    read_span(data, n, offset);
    return;
  }
  // A few reader threads, each taking every k-th chunk; the first error wins.
  size_t chunks = (n + kReadChunk - 1) / kReadChunk;
  size_t readers = std::min<size_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < readers; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (size_t c = t; c < chunks; c += readers) {
          size_t start = c * kReadChunk;
          read_span(data + start, std::min(kReadChunk, n - start), offset + start);
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) {
          error = std::current_exception();
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

FileWriter::FileWriter(std::string path) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), "wb");
  if (file_ == nullptr) {
    throw system_error("Failed to open file for writing", path_, errno);
  }
}

FileWriter::~FileWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
  }
}

void FileWriter::write(const char* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    throw system_error("Failed to write", path_, errno);
  }
}

void FileWriter::flush() {
  if (std::fflush(file_) != 0) {
    throw system_error("Failed to write", path_, errno);
  }
}

void MemoryReader::read(char* data, size_t n, uint64_t offset) {
  check_range(n, offset, bytes_->size(), label_);
  std::memcpy(data, bytes_->data() + offset, n);
}

}  // namespace mlx::core::io
