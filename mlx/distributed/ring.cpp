// The ring backend: TCP sockets between every pair of ranks (a full mesh, so point-to-point
// and split groups need nothing more), configured by a hostfile. MLX_HOSTFILE names a JSON
// list with one entry per rank, an "ip:port" string or a list of them (the first is used);
// MLX_RANK is this process's rank. Collectives run the classic ring schedule (reduce-scatter
// then all-gather over neighbours), sending and receiving at once with poll().
//
// Timeout: every wait is a poll bounded by MLX_DISTRIBUTED_TIMEOUT of inactivity, and a closed
// or reset connection is an error at once. A rank that fails shuts all its sockets down, so
// its neighbours fail at once too and the failure runs around the ring instead of leaving
// the far ranks to wait out the timeout.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "mlx/distributed/communicator.h"
#include "mlx/utils.h"

namespace mlx::core::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x4d4c5852;  // "MLXR"

// ---- hostfile -------------------------------------------------------------------------------

// The addresses of each rank from the hostfile's JSON: [["ip:port", ...], ...] or
// ["ip:port", ...]. A small reader for exactly that shape (strings in at most two levels of
// lists), so the library needs no JSON dependency.
std::vector<std::vector<std::string>> parse_hostfile(const std::string& text,
                                                     const std::string& path) {
  auto bad = [&](const std::string& why) -> std::runtime_error {
    return std::runtime_error(msg("[distributed] ring: cannot read the hostfile '", path,
                                  "' (MLX_HOSTFILE): ", why,
                                  ". Expected a JSON list with one \"ip:port\" (or a list of "
                                  "them) per rank."));
  };
  std::vector<std::vector<std::string>> ranks;
  int depth = 0;
  bool any_list = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '[') {
      if (++depth > 2)
        throw bad("lists nested deeper than two levels");
      if (depth == 2)
        ranks.emplace_back();
      any_list = true;
    } else if (c == ']') {
      if (--depth < 0)
        throw bad("unbalanced ']'");
    } else if (c == '"') {
      size_t end = text.find('"', i + 1);
      if (end == std::string::npos)
        throw bad("unterminated string");
      std::string s = text.substr(i + 1, end - i - 1);
      if (depth == 1) {
        ranks.push_back({s});
      } else if (depth == 2) {
        ranks.back().push_back(s);
      } else {
        throw bad("a string outside the list");
      }
      i = end;
    } else if (!(std::isspace(static_cast<unsigned char>(c)) || c == ',')) {
      throw bad(msg("unexpected character '", c, "'"));
    }
  }
  if (!any_list || depth != 0)
    throw bad("not a complete JSON list");
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].empty())
      throw bad(msg("rank ", r, " has no address"));
  }
  return ranks;
}

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;
};

Address resolve(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::runtime_error(
        msg("[distributed] ring: address '", text, "' is not of the form ip:port."));
  }
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw std::runtime_error(
        msg("[distributed] ring: cannot resolve '", text, "': ", gai_strerror(rc), "."));
  }
  Address a;
  std::memcpy(&a.addr, res->ai_addr, res->ai_addrlen);
  a.len = static_cast<socklen_t>(res->ai_addrlen);
  a.text = text;
  freeaddrinfo(res);
  return a;
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int buf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

// ---- the mesh of connections -----------------------------------------------------------------

// One pending transfer: `left` bytes still to send from / receive into `ptr` on `fd`.
// What precedes every message of a group's operation: which group, which of its calls, how
// many bytes. A receiver that expected another call (ranks issuing a group's collectives in
// different orders, e.g. from two streams, or a recv of another size) fails with a clear
// error instead of reading one call's bytes into another.
struct Header {
  uint64_t group = 0;  // a hash of the members and of the operation (send / recv: one kind)
  uint64_t call = 0;   // the group's n-th collective, or the n-th message between the pair
  uint64_t bytes = 0;

  bool operator==(const Header&) const = default;
};

// One pending transfer: the header (when there is one) and then `left` bytes from / into
// `ptr`, on the connection to `peer`.
struct Io {
  int peer;
  bool is_send;
  char* ptr;
  size_t left;
  Header head{};         // sent; or, for a receive, what is expected
  Header got{};          // a receive's header as it arrives
  size_t head_left = 0;  // header bytes still to move (0: no header)
};

// Every rank's socket (fds[rank] = -1 for this process). Shared by the global group and the
// groups split from it; one operation at a time.
class Mesh {
 public:
  Mesh(int rank, std::vector<std::string> addresses)
      : rank_(rank), addresses_(std::move(addresses)), fds_(addresses_.size(), -1) {}
  ~Mesh() {
    for (int fd : fds_) {
      if (fd >= 0)
        close(fd);
    }
  }

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(fds_.size()); }
  std::mutex& mutex() { return mutex_; }

  void connect_all(double timeout);

  // Runs every transfer to completion at once, or throws naming `op` (and breaks the mesh).
  void run(std::vector<Io>& ios, const char* op);

  [[noreturn]] void fail(const std::string& what) {
    failure_ = what;
    for (int& fd : fds_) {
      if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    }
    throw std::runtime_error(what);
  }
  void check_usable(const char* op) const {
    if (!failure_.empty()) {
      throw std::runtime_error(msg("[distributed] ring: ", op,
                                   " on a group that an earlier "
                                   "error broke: ",
                                   failure_));
    }
  }
  std::string who(int peer) const { return msg("rank ", peer, " (", addresses_[peer], ")"); }

 private:
  int rank_;
  std::vector<std::string> addresses_;
  std::vector<int> fds_;
  std::mutex mutex_;
  std::string failure_;
  double timeout_ = 300;
};

// Rank r listens on its address, connects to every lower rank (retrying while that one
// starts) and accepts every higher one; a handshake names the connecting rank.
void Mesh::connect_all(double timeout) {
  timeout_ = timeout;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
  auto expired = [&] { return Clock::now() >= deadline; };
  const int n = size();
  const std::string me = msg("[distributed] ring: rank ", rank_, " of ", n);

  Address self = resolve(addresses_[rank_]);
  int lfd = socket(self.addr.ss_family, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(lfd, reinterpret_cast<sockaddr*>(&self.addr), self.len) != 0 && errno == EADDRNOTAVAIL) {
    // Our address is the one others reach us at (e.g. behind NAT): listen on every interface.
    auto* any = reinterpret_cast<sockaddr_in*>(&self.addr);
    if (self.addr.ss_family == AF_INET)
      any->sin_addr.s_addr = htonl(INADDR_ANY);
    bind(lfd, reinterpret_cast<sockaddr*>(&self.addr), self.len);
  }
  if (listen(lfd, n) != 0) {
    int err = errno;
    close(lfd);
    throw std::runtime_error(
        msg(me, ": cannot listen on ", addresses_[rank_], ": ", std::strerror(err), "."));
  }
  set_nonblocking(lfd);

  struct Hello {
    uint32_t magic;
    int32_t rank;
    int32_t size;
  };
  auto cleanup_fail = [&](const std::string& why) {
    close(lfd);
    throw std::runtime_error(msg(me, ": ", why, " (MLX_DISTRIBUTED_TIMEOUT=", timeout, " s)."));
  };

  for (int peer = 0; peer < rank_; ++peer) {
    Address a = resolve(addresses_[peer]);
    while (true) {
      int fd = socket(a.addr.ss_family, SOCK_STREAM, 0);
      set_nonblocking(fd);
      int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a.addr), a.len);
      if (rc != 0 && errno == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, 1000);
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = (p.revents & POLLOUT) && err == 0 ? 0 : -1;
      }
      if (rc == 0) {
        tune(fd);
        Hello h{kMagic, rank_, n};
        fds_[peer] = fd;
        std::vector<Io> ios{{peer, true, reinterpret_cast<char*>(&h), sizeof(h)}};
        try {
          run(ios, "init");
        } catch (const std::exception& e) {
          close(lfd);
          throw;
        }
        break;
      }
      close(fd);
      if (expired())
        cleanup_fail(msg("could not connect to ", who(peer)));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int accepted = rank_ + 1; accepted < n; ++accepted) {
    int fd = -1;
    while (fd < 0) {
      pollfd p{lfd, POLLIN, 0};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
        cleanup_fail(msg("ranks above ", rank_, " did not all connect"));
      }
      fd = accept(lfd, nullptr, nullptr);
    }
    set_nonblocking(fd);
    tune(fd);
    Hello h{};
    pollfd p{fd, POLLIN, 0};
    size_t got = 0;
    while (got < sizeof(h)) {
      if (poll(&p, 1, static_cast<int>(timeout * 1000)) <= 0) {
        close(fd);
        cleanup_fail("a connecting rank sent no handshake");
      }
      ssize_t k = ::recv(fd, reinterpret_cast<char*>(&h) + got, sizeof(h) - got, 0);
      if (k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR))) {
        close(fd);
        cleanup_fail("a connecting rank hung up during the handshake");
      }
      got += k > 0 ? k : 0;
    }
    if (h.magic != kMagic || h.size != n || h.rank <= rank_ || h.rank >= n || fds_[h.rank] >= 0) {
      close(fd);
      cleanup_fail(msg("bad handshake (rank ", h.rank, ", size ", h.size,
                       "): every rank must use the same hostfile"));
    }
    fds_[h.rank] = fd;
  }
  close(lfd);
}

void Mesh::run(std::vector<Io>& ios, const char* op) {
  std::vector<pollfd> fds;
  std::vector<Io*> live;
  auto last_progress = Clock::now();
  const auto limit = std::chrono::duration<double>(timeout_);
  while (true) {
    fds.clear();
    live.clear();
    for (Io& io : ios) {
      if (io.left > 0 || io.head_left > 0) {
        fds.push_back({fds_[io.peer], static_cast<short>(io.is_send ? POLLOUT : POLLIN), 0});
        live.push_back(&io);
      }
    }
    if (live.empty())
      return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        limit - (Clock::now() - last_progress));
    int rc =
        left.count() > 0 ? poll(fds.data(), fds.size(), static_cast<int>(left.count()) + 1) : 0;
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc == 0) {
      std::string peers;
      for (Io* io : live)
        peers += (peers.empty() ? "" : ", ") + who(io->peer);
      fail(msg("[distributed] ring: rank ", rank_, ": ", op, " timed out: ", peers,
               " sent or received nothing for ", timeout_,
               " s (MLX_DISTRIBUTED_TIMEOUT). A peer died or stopped answering."));
    }
    for (size_t k = 0; k < live.size(); ++k) {
      Io& io = *live[k];
      if (fds[k].revents == 0)
        continue;
      // Header and payload in one call.
      char* head = reinterpret_cast<char*>(io.is_send ? &io.head : &io.got);
      iovec iov[2] = {{head + sizeof(Header) - io.head_left, io.head_left}, {io.ptr, io.left}};
      msghdr m{};
      m.msg_iov = io.head_left > 0 ? iov : iov + 1;
      m.msg_iovlen = io.head_left > 0 ? 2 : 1;
      ssize_t moved =
          io.is_send ? ::sendmsg(fds[k].fd, &m, MSG_NOSIGNAL) : ::recvmsg(fds[k].fd, &m, 0);
      if (moved > 0) {
        size_t n = static_cast<size_t>(moved);
        size_t in_head = std::min(n, io.head_left);
        io.head_left -= in_head;
        if (in_head > 0 && io.head_left == 0 && !io.is_send && !(io.got == io.head)) {
          fail(msg("[distributed] ring: rank ", rank_, ": ", op,
                   " got a message of another "
                   "call from ",
                   who(io.peer), " (", io.got.bytes, " bytes of call ", io.got.call,
                   "; this rank is in call ", io.head.call, " of ", io.head.bytes, " bytes",
                   io.got.group == io.head.group ? "" : ", of another collective or group",
                   "). Every rank must issue a group's collectives (and matching send / recv) "
                   "in the same order with the same shapes: use one stream per group."));
        }
        io.ptr += n - in_head;
        io.left -= n - in_head;
        last_progress = Clock::now();
      } else if (moved == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        std::string why = moved == 0 ? "closed the connection" : std::strerror(errno);
        fail(msg("[distributed] ring: rank ", rank_, ": ", op, " failed: ", who(io.peer), " ", why,
                 " (the process died or gave up after an error)."));
      }
    }
  }
}

// ---- the communicator ------------------------------------------------------------------------

// All-reduces up to this size exchange whole buffers (direct_all_reduce).
constexpr size_t kDirectBytes = 16 << 10;

class Ring final : public Communicator {
 public:
  Ring(std::shared_ptr<Mesh> mesh, std::vector<int> members, int rank)
      : mesh_(std::move(mesh)),
        members_(std::move(members)),
        rank_(rank),
        sent_(members_.size()),
        received_(members_.size()) {
    for (int m : members_)
      tag_ = (tag_ ^ static_cast<uint64_t>(m + 1)) * 1099511628211ull;
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  const char* name() const override { return "ring"; }

  void all_reduce(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    const size_t item = size_of(dtype);
    std::vector<size_t> offs(size() + 1);
    for (int c = 0; c <= size(); ++c)
      offs[c] = count * c / size() * item;
    auto lock = begin("all_reduce");
    char* buf = static_cast<char*>(out);
    if (offs.back() <= kDirectBytes) {
      return direct_all_reduce(in, buf, offs.back(), count, dtype, op);
    }
    if (in != out) {
      std::memcpy(buf, in, offs.back());
    }
    std::vector<char> scratch(offs[1] + item);
    reduce_scatter_steps(buf, offs, scratch.data(), dtype, op, "all_reduce");
    all_gather_steps(buf, offs, "all_reduce");
  }

  void all_gather(const void* in, void* out, size_t bytes) override {
    std::vector<size_t> offs(size() + 1);
    for (int c = 0; c <= size(); ++c)
      offs[c] = bytes * c;
    auto lock = begin("all_gather");
    char* buf = static_cast<char*>(out);
    std::memcpy(buf + offs[rank_], in, bytes);
    all_gather_steps(buf, offs, "all_gather");
  }

  void reduce_scatter(const void* in, void* out, size_t count, Dtype dtype, ReduceOp op) override {
    const size_t bytes = count * size_of(dtype);
    std::vector<size_t> offs(size() + 1);
    for (int c = 0; c <= size(); ++c)
      offs[c] = bytes * c;
    auto lock = begin("sum_scatter");
    std::vector<char> work(static_cast<const char*>(in),
                           static_cast<const char*>(in) + offs.back());
    std::vector<char> scratch(bytes);
    reduce_scatter_steps(work.data(), offs, scratch.data(), dtype, op, "sum_scatter");
    std::memcpy(out, work.data() + offs[rank_], bytes);
  }

  void send(const void* data, size_t bytes, int dst) override {
    check_peer(dst, "send");
    auto lock = begin("send", false);
    std::vector<Io> ios{io(dst, true, data, bytes, true)};
    mesh_->run(ios, "send");
  }

  void recv(void* data, size_t bytes, int src) override {
    check_peer(src, "recv");
    auto lock = begin("recv", false);
    std::vector<Io> ios{io(src, false, data, bytes, true)};
    mesh_->run(ios, "recv");
  }

  std::shared_ptr<Communicator> split(int color, int key) override {
    int mine[2] = {color, key};
    std::vector<int> all(2 * size());
    all_gather(mine, all.data(), sizeof(mine));
    std::vector<int> colors(size()), keys(size());
    for (int r = 0; r < size(); ++r) {
      colors[r] = all[2 * r];
      keys[r] = all[2 * r + 1];
    }
    int new_rank = 0;
    std::vector<int> members = split_members(colors, keys, rank_, &new_rank);
    for (int& m : members)
      m = members_[m];
    return std::make_shared<Ring>(mesh_, std::move(members), new_rank);
  }

 private:
  // Takes the mesh for one operation; a collective counts as the group's next call.
  std::unique_lock<std::mutex> begin(const char* op, bool collective = true) {
    std::unique_lock<std::mutex> lock(mesh_->mutex());
    mesh_->check_usable(op);
    if (collective) {
      ++calls_;
      op_ = std::hash<std::string_view>{}(op) << 1;  // so that all_sum never matches all_gather
    }
    return lock;
  }
  void check_peer(int peer, const char* op) const {
    if (peer < 0 || peer >= size() || peer == rank_) {
      throw std::invalid_argument(msg("[", op, "] Invalid peer rank ", peer, " for rank ", rank_,
                                      " of a group of size ", size(), "."));
    }
  }
  int right() const { return (rank_ + 1) % size(); }
  int left() const { return (rank_ + size() - 1) % size(); }
  static int mod(int a, int n) { return ((a % n) + n) % n; }

  // Small messages: one exchange with every member (a single round trip instead of the
  // ring's 2 (n - 1) steps), then every rank reduces the same values in rank order, so the
  // results agree bit for bit.
  void direct_all_reduce(const void* in, char* out, size_t bytes, size_t count, Dtype dtype,
                         ReduceOp op) {
    const int n = size();
    std::vector<char> all(bytes * n);
    std::memcpy(all.data() + bytes * rank_, in, bytes);
    std::vector<Io> ios;
    for (int r = 0; r < n; ++r) {
      if (r == rank_)
        continue;
      ios.push_back(io(r, true, in, bytes));
      ios.push_back(io(r, false, all.data() + bytes * r, bytes));
    }
    mesh_->run(ios, "all_reduce");
    std::memcpy(out, all.data(), bytes);
    for (int r = 1; r < n; ++r) {
      reduce_into(out, all.data() + bytes * r, count, dtype, op);
    }
  }

  // Chunk c of buf is [offs[c], offs[c + 1]). After these n - 1 steps this rank's chunk
  // `rank_` holds the reduction over every rank.
  void reduce_scatter_steps(char* buf, const std::vector<size_t>& offs, char* scratch, Dtype dtype,
                            ReduceOp op, const char* name) {
    const int n = size();
    for (int s = 0; s + 1 < n; ++s) {
      int out = mod(rank_ - s - 1, n), in = mod(rank_ - s - 2, n);
      size_t in_bytes = offs[in + 1] - offs[in];
      std::vector<Io> ios{io(right(), true, buf + offs[out], offs[out + 1] - offs[out]),
                          io(left(), false, scratch, in_bytes)};
      mesh_->run(ios, name);
      reduce_into(buf + offs[in], scratch, in_bytes / size_of(dtype), dtype, op);
    }
  }
  // Every rank starts with its chunk `rank_` and ends with all of them.
  void all_gather_steps(char* buf, const std::vector<size_t>& offs, const char* name) {
    const int n = size();
    for (int s = 0; s + 1 < n; ++s) {
      int out = mod(rank_ - s, n), in = mod(rank_ - s - 1, n);
      std::vector<Io> ios{io(right(), true, buf + offs[out], offs[out + 1] - offs[out]),
                          io(left(), false, buf + offs[in], offs[in + 1] - offs[in])};
      mesh_->run(ios, name);
    }
  }

  // A transfer of this group's current collective (or, with `p2p`, its n-th message with
  // that member).
  Io io(int member, bool is_send, const void* ptr, size_t bytes, bool p2p = false) {
    Io io{members_[member], is_send, static_cast<char*>(const_cast<void*>(ptr)), bytes};
    uint64_t call = !p2p ? calls_ : is_send ? sent_[member]++ : received_[member]++;
    io.head = {tag_ ^ (p2p ? 1 : op_), call, bytes};
    io.head_left = sizeof(Header);
    return io;
  }

  std::shared_ptr<Mesh> mesh_;
  std::vector<int> members_;  // global ranks, in this group's rank order
  int rank_;
  uint64_t tag_ = 14695981039346656037ull;  // FNV-1a of the members
  uint64_t calls_ = 0;                      // collectives started
  uint64_t op_ = 0;                         // the current one's kind (a hash of its name)
  std::vector<uint64_t> sent_, received_;   // messages exchanged with each member
};

}  // namespace

bool ring_available() { return true; }

std::shared_ptr<Communicator> ring_init(bool strict) {
  const char* path = std::getenv("MLX_HOSTFILE");
  const char* rank_env = std::getenv("MLX_RANK");
  if (path == nullptr || rank_env == nullptr) {
    if (strict) {
      throw std::runtime_error(
          "[distributed.init] The ring backend needs MLX_HOSTFILE and MLX_RANK (mlx.launch sets "
          "them).");
    }
    return nullptr;
  }
  std::ifstream file(path);
  if (!file) {
    throw std::runtime_error(
        msg("[distributed] ring: cannot open the hostfile '", path, "' (MLX_HOSTFILE)."));
  }
  std::stringstream text;
  text << file.rdbuf();
  auto hosts = parse_hostfile(text.str(), path);
  char* end = nullptr;
  long rank = std::strtol(rank_env, &end, 10);
  if (end == rank_env || *end != '\0' || rank < 0 || rank >= static_cast<long>(hosts.size())) {
    throw std::runtime_error(msg("[distributed] ring: MLX_RANK='", rank_env,
                                 "' is not a rank of the hostfile's ", hosts.size(), " ranks."));
  }
  std::vector<std::string> addresses;
  for (auto& h : hosts) {
    resolve(h[0]);  // every address is checked, even in a group of one
    addresses.push_back(h[0]);
  }
  auto mesh = std::make_shared<Mesh>(static_cast<int>(rank), std::move(addresses));
  if (mesh->size() > 1) {
    mesh->connect_all(timeout_seconds());
  }
  std::vector<int> members(mesh->size());
  for (int r = 0; r < mesh->size(); ++r)
    members[r] = r;
  return std::make_shared<Ring>(mesh, std::move(members), static_cast<int>(rank));
}

}  // namespace mlx::core::distributed::detail
