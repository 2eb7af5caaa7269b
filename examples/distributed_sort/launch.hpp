// How a process that a launcher started (Open MPI's mpirun, Slurm's srun,
// torchrun, MPICH's mpiexec) learns its place in the job, and how rank 0
// hands every process the same bytes (NCCL's unique id) without MPI: over
// TCP, or through a file on a path every process sees. Plain C++17 and
// POSIX sockets: no CUDA, no NCCL, so that it is tested on any machine
// (test/cpu/test_launch.cpp starts real processes).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace launch {

// A process's place: its rank among `world`, and its rank on its node (which
// picks its GPU). `launcher` names where it was read.
struct place {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  std::string launcher;
};

namespace detail {

inline const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

inline int env_int(const char* name, const char* launcher) {
  const char* v = env(name);
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 0 || x > 1 << 30) {
    throw std::runtime_error(std::string("launch: ") + name + "=" + v + " (" + launcher + ") is not a count");
  }
  return static_cast<int>(x);
}

// The moment timeout_s seconds from now.
inline std::chrono::steady_clock::time_point deadline_after(double timeout_s) {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
}

inline bool passed(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::steady_clock::now() > deadline;
}

}  // namespace detail

// The first launcher whose variables are set, in this order: Open MPI, Slurm,
// torchrun, MPICH/Hydra (PMI). A job started by none of them is one process
// (rank 0 of 1) only where no rank variable is set at all; a rank without a
// world size, or a rank not below it, is an error that names the variables.
inline place place_from_environment() {
  struct names {
    const char* launcher;
    const char* rank;
    const char* world;
    const char* local_rank;
  };
  static const names known[] = {
      {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"MPICH", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
  };
  for (const names& n : known) {
    if (detail::env(n.rank) == nullptr) continue;
    if (detail::env(n.world) == nullptr) {
      throw std::runtime_error(std::string("launch: ") + n.rank + " is set (" + n.launcher + ") but " + n.world +
                               " is not");
    }
    place p;
    p.launcher = n.launcher;
    p.rank = detail::env_int(n.rank, n.launcher);
    p.world = detail::env_int(n.world, n.launcher);
    p.local_rank = detail::env(n.local_rank) != nullptr ? detail::env_int(n.local_rank, n.launcher) : 0;
    if (p.world < 1 || p.rank >= p.world) {
      throw std::runtime_error(std::string("launch: ") + n.rank + "=" + std::to_string(p.rank) + " is not below " +
                               n.world + "=" + std::to_string(p.world) + " (" + n.launcher + ")");
    }
    return p;
  }
  place p;
  p.launcher = "none (one process)";
  return p;
}

// Where rank 0 hands out its bytes: LIBMERGE_BOOTSTRAP=tcp://HOST:PORT or
// file:///PATH, else torchrun's MASTER_ADDR and the port after MASTER_PORT.
// A file path must be fresh for each job (rank 0 removes it when every rank
// has read it).
struct rendezvous {
  bool tcp = true;
  std::string host;
  int port = 0;
  std::string path;
  std::string describe() const { return tcp ? host + ":" + std::to_string(port) : path; }
};

inline rendezvous rendezvous_from_environment() {
  rendezvous r;
  if (const char* b = detail::env("LIBMERGE_BOOTSTRAP")) {
    const std::string s = b;
    if (s.rfind("file://", 0) == 0) {
      r.tcp = false;
      r.path = s.substr(7);
      return r;
    }
    const std::size_t colon = s.rfind(':');
    if (s.rfind("tcp://", 0) == 0 && colon > 6) {
      r.host = s.substr(6, colon - 6);
      r.port = std::atoi(s.c_str() + colon + 1);
      if (r.port > 0 && r.port < 65536) return r;
    }
    throw std::runtime_error("launch: LIBMERGE_BOOTSTRAP=" + s + " is neither tcp://HOST:PORT nor file:///PATH");
  }
  const char* host = detail::env("MASTER_ADDR");
  const char* port = detail::env("MASTER_PORT");
  if (host == nullptr || port == nullptr) {
    throw std::runtime_error(
        "launch: no rendezvous: set LIBMERGE_BOOTSTRAP=tcp://HOST:PORT (HOST: rank 0's node) or "
        "file:///PATH (a fresh path every process sees), or MASTER_ADDR and MASTER_PORT (torchrun sets them)");
  }
  // MASTER_PORT + 1: torchrun's own store listens on MASTER_PORT.
  r.host = host;
  r.port = std::atoi(port) + 1;
  if (r.port <= 1 || r.port >= 65536) throw std::runtime_error(std::string("launch: MASTER_PORT=") + port + " is no port");
  return r;
}

namespace detail {

// A socket that closes itself.
class socket_fd {
 public:
  explicit socket_fd(int fd = -1) : fd_(fd) {}
  socket_fd(socket_fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  socket_fd& operator=(socket_fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  socket_fd(const socket_fd&) = delete;
  socket_fd& operator=(const socket_fd&) = delete;
  ~socket_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits for fd to be readable (or writable) until `deadline`; false when it passed.
inline bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("launch: poll: ") + std::strerror(errno));
  }
}

// Exactly n bytes, or false (the peer closed, or the deadline passed).
inline bool read_all(int fd, void* to, std::size_t n, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<unsigned char*>(to);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return false;
    if (r > 0) {
      p += r;
      n -= static_cast<std::size_t>(r);
    }
  }
  return true;
}

inline bool write_all(int fd, const void* from, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(from);
  while (n > 0) {
    const ssize_t r = ::send(fd, p, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

constexpr std::uint32_t hello_magic = 0x6c6d7267;  // "lmrg"

// The ranks of [1, world) not in `seen`, as "3, 5, 6".
inline std::string missing_ranks(const std::vector<bool>& seen) {
  std::string s;
  for (std::size_t r = 1; r < seen.size(); ++r) {
    if (!seen[r]) s += (s.empty() ? "" : ", ") + std::to_string(r);
  }
  return s;
}

// Rank 0 over TCP: listens, answers each rank's hello (magic, rank) with the
// bytes, and returns once every rank of [1, world) has had them.
inline void serve_tcp(const place& me, const rendezvous& at, const std::vector<unsigned char>& bytes,
                      double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  socket_fd listener(::socket(AF_INET, SOCK_STREAM, 0));
  if (listener.get() < 0) throw std::runtime_error(std::string("launch: socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(at.port));
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener.get(), 1024) != 0) {
    throw std::runtime_error("launch: rank 0 cannot listen on port " + std::to_string(at.port) + ": " +
                             std::strerror(errno));
  }
  std::vector<bool> seen(static_cast<std::size_t>(me.world), false);
  int served = 0;
  const std::uint64_t size = bytes.size();
  while (served < me.world - 1) {
    if (!wait_fd(listener.get(), POLLIN, deadline)) {
      throw std::runtime_error("launch: rank 0 waited " + std::to_string(timeout_s) + " s at " + at.describe() +
                               " for ranks " + missing_ranks(seen) + " of " + std::to_string(me.world) +
                               ", which never came");
    }
    socket_fd peer(::accept(listener.get(), nullptr, nullptr));
    if (peer.get() < 0) continue;
    std::uint32_t hello[2] = {0, 0};
    // A peer that connects and dies (or speaks no hello) is dropped: its rank is still awaited.
    const auto hello_deadline = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    if (!read_all(peer.get(), hello, sizeof hello, hello_deadline) || hello[0] != hello_magic) continue;
    const std::uint32_t r = hello[1];
    if (r == 0 || r >= static_cast<std::uint32_t>(me.world)) {
      throw std::runtime_error("launch: rank 0 got a hello from rank " + std::to_string(r) + ", not in [1, " +
                               std::to_string(me.world) + "): two jobs share " + at.describe() + "?");
    }
    if (seen[r]) {
      throw std::runtime_error("launch: rank " + std::to_string(r) + " said hello twice at " + at.describe() +
                               ": two processes of one rank?");
    }
    if (write_all(peer.get(), &size, sizeof size) && write_all(peer.get(), bytes.data(), bytes.size())) {
      seen[r] = true;
      ++served;
    }
  }
}

// Another rank over TCP: connects (again and again: rank 0 may start later),
// says hello, reads the bytes.
inline std::vector<unsigned char> fetch_tcp(const place& me, const rendezvous& at, double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(at.port);
  if (::getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    throw std::runtime_error("launch: rank " + std::to_string(me.rank) + " cannot resolve rank 0's host " + at.host);
  }
  const sockaddr_in target = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  ::freeaddrinfo(found);
  while (std::chrono::steady_clock::now() < deadline) {
    socket_fd s(::socket(AF_INET, SOCK_STREAM, 0));
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const std::uint32_t hello[2] = {hello_magic, static_cast<std::uint32_t>(me.rank)};
    std::uint64_t size = 0;
    if (!write_all(s.get(), hello, sizeof hello) || !read_all(s.get(), &size, sizeof size, deadline) ||
        size > (1u << 20)) {
      continue;
    }
    std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
    if (read_all(s.get(), bytes.data(), bytes.size(), deadline)) return bytes;
  }
  throw std::runtime_error("launch: rank " + std::to_string(me.rank) + " found no rank 0 at " + at.describe() +
                           " within " + std::to_string(timeout_s) + " s");
}

inline bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Through a file: rank 0 writes path (a temporary name, then renamed, so that
// no reader sees half of it), each other rank reads it and leaves
// path.<rank> behind; rank 0 waits for them all, then removes every file.
inline std::vector<unsigned char> share_file(const place& me, const rendezvous& at,
                                             const std::vector<unsigned char>& bytes, double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  if (me.rank == 0) {
    for (int r = 1; r < me.world; ++r) std::remove((at.path + "." + std::to_string(r)).c_str());  // an old job's
    const std::string tmp = at.path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw std::runtime_error("launch: rank 0 cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), at.path.c_str()) != 0) {
      throw std::runtime_error("launch: rank 0 cannot rename " + tmp + " to " + at.path + ": " + std::strerror(errno));
    }
    std::vector<bool> seen(static_cast<std::size_t>(me.world), false);
    for (int left = me.world - 1; left > 0;) {
      for (int r = 1; r < me.world; ++r) {
        if (!seen[static_cast<std::size_t>(r)] && file_exists(at.path + "." + std::to_string(r))) {
          seen[static_cast<std::size_t>(r)] = true;
          --left;
        }
      }
      if (left == 0) break;
      if (passed(deadline)) {
        std::remove(at.path.c_str());
        throw std::runtime_error("launch: rank 0 waited " + std::to_string(timeout_s) + " s at " + at.path +
                                 " for ranks " + missing_ranks(seen) + " of " + std::to_string(me.world) +
                                 ", which never came");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::remove(at.path.c_str());
    for (int r = 1; r < me.world; ++r) std::remove((at.path + "." + std::to_string(r)).c_str());
    return bytes;
  }
  for (;;) {
    std::ifstream in(at.path, std::ios::binary);
    if (in) {
      std::vector<unsigned char> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(at.path + "." + std::to_string(me.rank)).put('1');
      return got;
    }
    if (passed(deadline)) {
      throw std::runtime_error("launch: rank " + std::to_string(me.rank) + " found no rank 0's file " + at.path +
                               " within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace detail

// Rank 0's `bytes` on every rank (what rank 0 passes is returned to it too).
// Rank 0 returns once every rank has them, or throws naming the ranks that
// did not come within timeout_s; the others throw when rank 0 did not.
inline std::vector<unsigned char> share_from_rank0(const place& me, const rendezvous& at,
                                                   const std::vector<unsigned char>& bytes, double timeout_s) {
  if (me.world == 1) return bytes;
  if (!at.tcp) return detail::share_file(me, at, bytes, timeout_s);
  if (me.rank == 0) {
    detail::serve_tcp(me, at, bytes, timeout_s);
    return bytes;
  }
  return detail::fetch_tcp(me, at, timeout_s);
}

}  // namespace launch
