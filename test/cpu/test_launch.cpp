// The distributed sort example's launch logic (examples/distributed_sort/
// launch.hpp) with real processes: each child is started by fork with a
// launcher's environment, runs the rendezvous, and writes what it got (or
// its error) to a pipe. Every child has a hard deadline of its own (alarm),
// and the parent kills what is left, so no case can hang the runner.
#define BOOST_TEST_MODULE libmerge_cpu_launch
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../../examples/distributed_sort/launch.hpp"

namespace {

// A port the kernel just gave out, so free now (a second job could take it
// in between: rare, and the case then fails rather than hangs).
int free_port() {
  launch::detail::socket_fd s(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

struct outcome {
  bool ok = false;
  std::string text;  // the bytes got, or the error's message
  int status = 0;
};

// Starts f(env) in a child process with `env` set (others of the launchers
// cleared), its hard deadline `hard_s`; returns what it wrote.
struct child {
  pid_t pid = -1;
  int out = -1;
};
child start(const std::map<std::string, std::string>& env, std::function<std::string()> f, int hard_s = 20) {
  int fds[2];
  BOOST_REQUIRE_EQUAL(::pipe(fds), 0);
  const pid_t pid = ::fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::alarm(static_cast<unsigned>(hard_s));
    for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                          "SLURM_NTASKS", "SLURM_LOCALID", "RANK", "WORLD_SIZE", "LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
                          "MPI_LOCALRANKID", "MASTER_ADDR", "MASTER_PORT", "LIBMERGE_BOOTSTRAP"}) {
      ::unsetenv(v);
    }
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::string msg;
    char ok = '0';
    try {
      msg = f();
      ok = '1';
    } catch (const std::exception& e) {
      msg = e.what();
    }
    (void)!::write(fds[1], &ok, 1);
    (void)!::write(fds[1], msg.data(), msg.size());
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

outcome finish(child c, int wait_s = 30) {
  outcome o;
  std::string all;
  char buf[4096];
  for (;;) {
    const ssize_t r = ::read(c.out, buf, sizeof buf);
    if (r <= 0) break;
    all.append(buf, static_cast<std::size_t>(r));
  }
  ::close(c.out);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  while (::waitpid(c.pid, &o.status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &o.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  o.ok = !all.empty() && all[0] == '1';
  o.text = all.empty() ? "(no output: the child died)" : all.substr(1);
  return o;
}

std::string random_id(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string id(128, '\0');
  for (char& c : id) c = static_cast<char>('a' + rng() % 26);  // printable: easy to compare in messages
  return id;
}

std::map<std::string, std::string> torchrun_env(int rank, int world, const std::string& bootstrap) {
  std::map<std::string, std::string> e = {{"RANK", std::to_string(rank)},
                                          {"WORLD_SIZE", std::to_string(world)},
                                          {"LOCAL_RANK", std::to_string(rank)}};
  if (bootstrap.empty()) {
    e["MASTER_ADDR"] = "127.0.0.1";
  } else {
    e["LIBMERGE_BOOTSTRAP"] = bootstrap;
  }
  return e;
}

// The rendezvous as the example runs it: rank 0's id, the others' empty.
std::function<std::string()> share(const std::string& id, double timeout_s) {
  return [id, timeout_s] {
    const launch::place me = launch::place_from_environment();
    const launch::rendezvous at = launch::rendezvous_from_environment();
    const std::vector<unsigned char> mine = me.rank == 0 ? std::vector<unsigned char>(id.begin(), id.end())
                                                         : std::vector<unsigned char>{};
    const auto got = launch::share_from_rank0(me, at, mine, timeout_s);
    return std::string(got.begin(), got.end());
  };
}

// Starts the ranks `ranks` of `world`, rank 0 last (the others must wait
// for it), and returns each one's outcome.
std::map<int, outcome> run_job(int world, const std::vector<int>& ranks, const std::string& bootstrap,
                               double timeout_s, const std::string& id) {
  const std::string port = std::to_string(free_port());
  std::map<int, child> children;
  for (auto it = ranks.rbegin(); it != ranks.rend(); ++it) {
    // "": torchrun's MASTER_ADDR and MASTER_PORT; "tcp": LIBMERGE_BOOTSTRAP=tcp://...
    auto env = torchrun_env(*it, world, bootstrap == "tcp" ? "tcp://127.0.0.1:" + port : bootstrap);
    if (bootstrap.empty()) env["MASTER_PORT"] = std::to_string(std::stoi(port) - 1);  // rank 0 listens on the next
    children[*it] = start(env, share(id, timeout_s));
  }
  std::map<int, outcome> out;
  for (auto& [r, c] : children) out[r] = finish(c);
  return out;
}

std::string temp_path(const char* name) {
  return (std::string(std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp") + "/libmerge_" + name + "_" +
          std::to_string(::getpid()));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(launch_environment)

BOOST_AUTO_TEST_CASE(each_launcher_names_rank_world_and_local_rank) {
  const std::vector<std::map<std::string, std::string>> envs = {
      {{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
      {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"}},
      {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}},
      {{"PMI_RANK", "3"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"}},
  };
  for (const auto& env : envs) {
    const outcome o = finish(start(env, [] {
      const launch::place p = launch::place_from_environment();
      return std::to_string(p.rank) + "/" + std::to_string(p.world) + "/" + std::to_string(p.local_rank) + " " +
             p.launcher;
    }));
    BOOST_TEST_INFO(o.text);
    BOOST_TEST(o.ok);
    BOOST_TEST(o.text.rfind("3/8/1 ", 0) == 0u);
  }
}

BOOST_AUTO_TEST_CASE(no_launcher_is_one_process_and_bad_variables_are_named) {
  const auto read_place = [] {
    const launch::place p = launch::place_from_environment();
    return std::to_string(p.rank) + "/" + std::to_string(p.world);
  };
  const outcome alone = finish(start({}, read_place));
  BOOST_TEST(alone.ok);
  BOOST_TEST(alone.text == "0/1");
  const outcome no_world = finish(start({{"RANK", "1"}}, read_place));
  BOOST_TEST(!no_world.ok);
  BOOST_TEST(no_world.text == "launch: RANK is set (torchrun) but WORLD_SIZE is not");
  const outcome too_big = finish(start({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}}, read_place));
  BOOST_TEST(!too_big.ok);
  BOOST_TEST(too_big.text == "launch: SLURM_PROCID=4 is not below SLURM_NTASKS=4 (Slurm)");
  const outcome junk = finish(start({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, read_place));
  BOOST_TEST(!junk.ok);
  BOOST_TEST(junk.text == "launch: RANK=x (torchrun) is not a count");
  const outcome no_rendezvous = finish(start({{"RANK", "1"}, {"WORLD_SIZE", "2"}}, [] {
    launch::rendezvous_from_environment();
    return std::string();
  }));
  BOOST_TEST(!no_rendezvous.ok);
  BOOST_TEST(no_rendezvous.text.find("no rendezvous: set LIBMERGE_BOOTSTRAP") != std::string::npos);
  const outcome bad_url = finish(start({{"LIBMERGE_BOOTSTRAP", "udp://x:1"}}, [] {
    launch::rendezvous_from_environment();
    return std::string();
  }));
  BOOST_TEST(!bad_url.ok);
  BOOST_TEST(bad_url.text == "launch: LIBMERGE_BOOTSTRAP=udp://x:1 is neither tcp://HOST:PORT nor file:///PATH");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(rendezvous)

BOOST_AUTO_TEST_CASE(every_rank_gets_rank_0s_id_over_tcp_and_through_a_file) {
  for (const std::string& how : {std::string(), std::string("tcp"), "file://" + temp_path("id")}) {
    for (int world : {2, 4, 8}) {
      std::vector<int> ranks(static_cast<std::size_t>(world));
      for (int r = 0; r < world; ++r) ranks[static_cast<std::size_t>(r)] = r;
      const std::string id = random_id(static_cast<std::uint64_t>(world));
      const auto out = run_job(world, ranks, how, 10.0, id);
      for (const auto& [r, o] : out) {
        BOOST_TEST_INFO("world " << world << ", rank " << r << " (" << (how.empty() ? "MASTER_ADDR" : how) << "): " << o.text);
        BOOST_TEST(o.ok);
        BOOST_TEST(o.text == id);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_rank_that_never_starts_is_named_by_rank_0) {
  for (const std::string& how : {std::string(), "file://" + temp_path("missing")}) {
    const auto out = run_job(4, {0, 1, 3}, how, 1.5, random_id(1));
    BOOST_TEST_INFO(out.at(0).text);
    BOOST_TEST(!out.at(0).ok);
    BOOST_TEST(out.at(0).text.find("for ranks 2 of 4, which never came") != std::string::npos);
    BOOST_TEST(out.at(1).ok);  // the others had the id: NCCL's own init then times out without rank 2
    BOOST_TEST(out.at(3).ok);
  }
}

BOOST_AUTO_TEST_CASE(without_rank_0_every_rank_fails_within_its_timeout) {
  for (const std::string& how : {std::string(), "file://" + temp_path("no_root")}) {
    const auto begin = std::chrono::steady_clock::now();
    const auto out = run_job(3, {1, 2}, how, 1.0, random_id(2));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    BOOST_TEST(took < 10.0);
    for (const auto& [r, o] : out) {
      BOOST_TEST_INFO("rank " << r << ": " << o.text);
      BOOST_TEST(!o.ok);
      BOOST_TEST(o.text.find("rank " + std::to_string(r) + " found no rank 0") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_process_killed_before_its_hello_is_still_awaited_and_named) {
  // Rank 2 connects to rank 0 and is killed (SIGKILL) before it says hello:
  // rank 0 drops the connection and names rank 2 when its time is up.
  const std::string port = std::to_string(free_port());
  const std::string url = "tcp://127.0.0.1:" + port;
  auto env0 = torchrun_env(0, 3, url);
  auto env1 = torchrun_env(1, 3, url);
  child root = start(env0, share(random_id(3), 2.0));
  child one = start(env1, share("", 2.0));
  child killed = start({}, [port] {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(std::stoi(port)));
    for (int i = 0; i < 100; ++i) {
      const int s = ::socket(AF_INET, SOCK_STREAM, 0);
      if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) ::kill(::getpid(), SIGKILL);
      ::close(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::string("never connected");
  });
  const outcome k = finish(killed);
  BOOST_TEST(WIFSIGNALED(k.status));
  const outcome o0 = finish(root), o1 = finish(one);
  BOOST_TEST_INFO(o0.text);
  BOOST_TEST(!o0.ok);
  BOOST_TEST(o0.text.find("for ranks 2 of 3, which never came") != std::string::npos);
  BOOST_TEST(o1.ok);
}

BOOST_AUTO_TEST_CASE(two_processes_of_one_rank_are_refused) {
  const std::string port = std::to_string(free_port());
  std::vector<child> cs;
  for (int r : {1, 1, 0}) cs.push_back(start(torchrun_env(r, 3, "tcp://127.0.0.1:" + port), share(random_id(4), 3.0)));
  const outcome root = finish(cs[2]);
  BOOST_TEST_INFO(root.text);
  BOOST_TEST(!root.ok);
  BOOST_TEST(root.text.find("rank 1 said hello twice") != std::string::npos);
  finish(cs[0]);
  finish(cs[1]);
}

BOOST_AUTO_TEST_SUITE_END()
