// AtomicFile must never replace a destination that is no regular file (a FIFO here; /dev/null
// in real life) with the renamed temp file.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "io/atomic_file.h"

TEST_CASE("AtomicFile writes a FIFO in place instead of renaming over it", "[io]") {
  auto dir = std::filesystem::temp_directory_path() / ("spopt-fifo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string fifo = (dir / "pipe").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    received = ss.str();
  });
  {
    spopt::AtomicFile out(fifo);
    out.write("through the pipe");
    out.commit();
  }
  reader.join();
  struct stat st;
  REQUIRE(::stat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(received == "through the pipe");
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) entries += e.path().filename() != "pipe";
  CHECK(entries == 0);  // no temp file left beside it
  std::filesystem::remove_all(dir);
}
