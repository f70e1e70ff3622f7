#include "views/graphviz.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <string>
#include <vector>

#include "support/error.h"

extern char** environ;

namespace spopt {

std::optional<std::string> findOnPath(std::string_view tool) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::string_view dirs(path);
  while (true) {
    size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + std::string(tool);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

namespace {

// The result of running a filter program: its exit status and what it printed.
struct FilterResult {
  int status = 0;  // as from waitpid
  bool timed_out = false;
  std::string out, err;
};

class Pipe {
 public:
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    closeEnd(0);
    closeEnd(1);
  }
  void closeEnd(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
  int fd[2] = {-1, -1};
};

// Feeds `input` to the program's stdin while draining its stdout and stderr (poll, so that
// neither side blocks on a full pipe), then waits for it.
FilterResult runFilter(const std::string& exe, const std::vector<std::string>& args, std::string_view input, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  Pipe in, out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw InputError(exe, "", std::string("cannot run: ") + std::strerror(rc));
  in.closeEnd(0);
  out.closeEnd(1);
  err.closeEnd(1);
  fcntl(in.fd[1], F_SETFL, O_NONBLOCK);

  // A filter that exits early must not kill us with SIGPIPE; write() reports EPIPE instead.
  struct sigaction ignore{}, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);

  FilterResult r;
  size_t written = 0;
  if (input.empty()) in.closeEnd(1);
  char buf[65536];
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[3];
    int n = 0;
    if (in.fd[1] >= 0) fds[n++] = {in.fd[1], POLLOUT, 0};
    if (out.fd[0] >= 0) fds[n++] = {out.fd[0], POLLIN, 0};
    if (err.fd[0] >= 0) fds[n++] = {err.fd[0], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill(pid, SIGKILL);
      r.timed_out = true;
      break;
    }
    int ready = poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in.fd[1]) {
        ssize_t w = write(in.fd[1], input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if ((w < 0 && errno != EAGAIN) || written == input.size()) in.closeEnd(1);
      } else {
        Pipe& p = fds[i].fd == out.fd[0] ? out : err;
        std::string& sink = &p == &out ? r.out : r.err;
        ssize_t got = read(p.fd[0], buf, sizeof buf);
        if (got > 0)
          sink.append(buf, static_cast<size_t>(got));
        else if (got == 0 || errno != EINTR)
          p.closeEnd(0);
      }
    }
  }
  in.closeEnd(1);
  sigaction(SIGPIPE, &previous, nullptr);
  while (waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

}  // namespace

std::optional<std::string> dotToSvg(const std::string& dot_text, double timeout_s) {
  auto exe = findOnPath("dot");
  if (!exe)
    throw InputError("dot", "", "Graphviz's dot is not on PATH; install it (Debian: apt-get install graphviz) "
                                "or use --format dot");
  FilterResult r = runFilter(*exe, {"dot", "-Tsvg"}, dot_text, timeout_s);
  if (r.timed_out) return std::nullopt;
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    std::string why = WIFEXITED(r.status) ? "exit status " + std::to_string(WEXITSTATUS(r.status))
                                          : "killed by signal " + std::to_string(WTERMSIG(r.status));
    std::string first_line = r.err.substr(0, r.err.find('\n'));
    throw InputError(*exe, "", "failed (" + why + ")" + (first_line.empty() ? "" : ": " + first_line));
  }
  return r.out;
}

}  // namespace spopt
