// SPDX-License-Identifier: MIT
// Test-only stand-in for a contained GPU helper: misbehaves on request (argv[1]) so the tests of
// sys/contained.hpp can provoke every outcome without a GPU.
//   ok                      prints a JSON document, exits 0
//   echo                    copies stdin to stdout
//   segv | abort            dies with SIGSEGV / SIGABRT
//   hang                    sleeps forever
//   hang-child              prints {"grandchild": PID} for a child that sleeps forever, then hangs
//   exit N                  writes a line on stderr, exits with status N
//   garbage                 prints binary junk
//   flood                   prints 100 MiB
//   env NAME                prints the variable's value (or "<unset>")
//   close-stdout-then-hang  closes stdout and stderr, then hangs
//   quiet-exit MS           closes stdout and stderr, sleeps MS milliseconds, exits 0 (its exit is
//                           the only event the caller can see)
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::_Exit(70);
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void write_str(int fd, const std::string& s) { write_all(fd, s.data(), s.size()); }

[[noreturn]] void hang() {
  for (;;) ::pause();
}

[[noreturn]] void die_by(int sig) {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // no core files in the build tree
  ::signal(sig, SIG_DFL);              // a sanitizer's handler must not turn this into an exit
  ::raise(sig);
  std::_Exit(71);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "ok") {
    write_str(1, R"({"helper": "fake", "ok": true, "gpus": [0, 1]})"
                 "\n");
    return 0;
  }
  if (mode == "echo") {
    std::vector<char> buf(65536);
    for (;;) {
      const ssize_t n = ::read(0, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      write_all(1, buf.data(), static_cast<std::size_t>(n));
    }
    return 0;
  }
  if (mode == "segv") die_by(SIGSEGV);
  if (mode == "abort") die_by(SIGABRT);
  if (mode == "hang") hang();
  if (mode == "hang-child") {
    const pid_t child = ::fork();  // fine here: this test program never touches CUDA
    if (child < 0) return 72;
    if (child == 0) hang();
    write_str(1, "{\"grandchild\": " + std::to_string(child) + "}\n");
    hang();
  }
  if (mode == "exit" && argc > 2) {
    write_str(2, "fake helper: exiting with status " + std::string(argv[2]) + " as asked\n");
    return std::atoi(argv[2]);
  }
  if (mode == "garbage") {
    static const char junk[] =
        "\x7f"
        "ELF\x02\x01\x01\x00\xff\xfe\x1b[31m{\"not\": json";
    write_all(1, junk, sizeof junk - 1);
    return 0;
  }
  if (mode == "flood") {
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 100; ++i) write_str(1, chunk);
    return 0;
  }
  if (mode == "env" && argc > 2) {
    const char* value = std::getenv(argv[2]);
    write_str(1, value != nullptr ? value : "<unset>");
    return 0;
  }
  if (mode == "close-stdout-then-hang") {
    ::close(1);
    ::close(2);
    hang();
  }
  if (mode == "quiet-exit" && argc > 2) {
    ::close(1);
    ::close(2);
    const long ms = std::atol(argv[2]);
    timespec t{ms / 1000, (ms % 1000) * 1000000L};
    while (::nanosleep(&t, &t) != 0 && errno == EINTR) {}
    return 0;
  }
  write_str(2, "fake helper: unknown mode '" + mode + "'\n");
  return 64;
}
