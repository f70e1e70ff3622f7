// OutputTransaction: a command's outputs appear together at commit() or not at all; AtomicFile
// keeps a destination's mode, writes through symlinks and leaves no temp behind.
#include <catch2/catch.hpp>

#include "test_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "io/atomic_file.h"
#include "io/output_transaction.h"
#include "io/source.h"
#include "io/temp_cleanup.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace spopt;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("spopt-tx-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  // Every entry under the folder, recursively, as relative paths (sorted).
  std::vector<std::string> entries() const {
    std::vector<std::string> all;
    for (auto& e : fs::recursive_directory_iterator(path)) all.push_back(e.path().lexically_relative(path).string());
    std::sort(all.begin(), all.end());
    return all;
  }
};

void writePlain(const std::string& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

mode_t modeOf(const std::string& p) {
  struct stat st;
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("OutputTransaction commits every output together", "[io][transaction]") {
  TempDir dir("commit");
  OutputTransaction tx;
  tx.file(dir / "a.json", "A");
  AtomicFile& b = tx.file(dir / "b.json");
  b.write("B1");
  b.write("B2");
  std::string staged = tx.folder(dir / "dump");
  fs::create_directories(fs::path(staged) / "rank0");
  writePlain((fs::path(staged) / "rank0" / "x.npy").string(), "X");
  // Nothing is visible before commit: no a.json, b.json or dump (temps are unnamed or hidden).
  CHECK(!fs::exists(dir / "a.json"));
  CHECK(!fs::exists(dir / "b.json"));
  CHECK(!fs::exists(dir / "dump"));
  CHECK(tx.displayName(staged + "/rank0/x.npy") == dir / "dump/rank0/x.npy");
  tx.commit();
  CHECK(spopt::test::readFileBytes(dir / "a.json") == "A");
  CHECK(spopt::test::readFileBytes(dir / "b.json") == "B1B2");
  CHECK(spopt::test::readFileBytes(dir / "dump/rank0/x.npy") == "X");
  CHECK(dir.entries() == std::vector<std::string>{"a.json", "b.json", "dump", "dump/rank0", "dump/rank0/x.npy"});
  CHECK(registeredTempCount() == 0);
}

TEST_CASE("OutputTransaction not committed leaves nothing, old content untouched", "[io][transaction]") {
  TempDir dir("rollback");
  writePlain(dir / "a.json", "old A");
  {
    OutputTransaction tx;
    tx.file(dir / "a.json", "new A");
    tx.file(dir / "b.json", "new B");
    std::string staged = tx.folder(dir / "deep/er/dump");
    writePlain(staged + "/x.npy", "X");
    tx.makeFolders(dir / "made/here");
    CHECK(fs::is_directory(dir / "made/here"));
    CHECK(registeredTempCount() >= 1);
    // destroyed uncommitted, as when a command throws
  }
  CHECK(spopt::test::readFileBytes(dir / "a.json") == "old A");
  CHECK(dir.entries() == std::vector<std::string>{"a.json"});  // folders it made are gone too
  CHECK(registeredTempCount() == 0);
}

TEST_CASE("OutputTransaction: an unwritable output fails when staged, before any is written", "[io][transaction]") {
  TempDir dir("unwritable");
  writePlain(dir / "file", "not a folder");
  {
    OutputTransaction tx;
    tx.file(dir / "out.json", "OUT");
    CHECK_THROWS_AS(tx.file(dir / "file/report.json"), InputError);  // parent is a regular file
    CHECK_THROWS_AS(tx.folder(dir / "file"), InputError);            // a folder output over a file
    CHECK_THROWS_AS(tx.makeFolders(dir / "file/sub"), InputError);
  }
  CHECK(dir.entries() == std::vector<std::string>{"file"});
}

TEST_CASE("OutputTransaction merges a folder output into an existing folder", "[io][transaction]") {
  TempDir dir("merge");
  fs::create_directories(dir / "dump/rank0");
  writePlain(dir / "dump/rank0/old.npy", "OLD");
  writePlain(dir / "dump/rank0/x.npy", "X old");
  writePlain(dir / "dump/keep.txt", "mine");
  OutputTransaction tx;
  std::string staged = tx.folder(dir / "dump/");
  CHECK(fs::path(staged).parent_path() == fs::path(dir / "dump"));  // inside it: same filesystem
  fs::create_directories(fs::path(staged) / "rank0");
  fs::create_directories(fs::path(staged) / "rank1");
  writePlain(staged + "/rank0/x.npy", "X new");
  writePlain(staged + "/rank1/y.npy", "Y");
  tx.commit();
  CHECK(spopt::test::readFileBytes(dir / "dump/rank0/x.npy") == "X new");
  CHECK(spopt::test::readFileBytes(dir / "dump/rank0/old.npy") == "OLD");
  CHECK(spopt::test::readFileBytes(dir / "dump/rank1/y.npy") == "Y");
  CHECK(spopt::test::readFileBytes(dir / "dump/keep.txt") == "mine");
  CHECK(dir.entries() == std::vector<std::string>{"dump", "dump/keep.txt", "dump/rank0", "dump/rank0/old.npy",
                                                  "dump/rank0/x.npy", "dump/rank1", "dump/rank1/y.npy"});
}

TEST_CASE("AtomicFile keeps the destination's mode, new files get 0666 & ~umask", "[io][transaction]") {
  TempDir dir("mode");
  writePlain(dir / "secret.json", "old");
  REQUIRE(::chmod((dir / "secret.json").c_str(), 0600) == 0);
  writeFileAtomic(dir / "secret.json", "new");
  CHECK(spopt::test::readFileBytes(dir / "secret.json") == "new");
  CHECK(modeOf(dir / "secret.json") == 0600);
  REQUIRE(::chmod((dir / "secret.json").c_str(), 0640) == 0);
  writeFileAtomic(dir / "secret.json", "newer");
  CHECK(modeOf(dir / "secret.json") == 0640);

  mode_t mask = ::umask(022);
  writeFileAtomic(dir / "fresh.json", "x");
  CHECK(modeOf(dir / "fresh.json") == 0644);
  // A replaced file that exists keeps 0644 too (nothing about it changes but the content).
  writeFileAtomic(dir / "fresh.json", "y");
  CHECK(modeOf(dir / "fresh.json") == 0644);
  ::umask(mask);
}

TEST_CASE("AtomicFile writes through a symlinked destination", "[io][transaction]") {
  TempDir dir("symlink");
  fs::create_directories(dir / "real");
  writePlain(dir / "real/target.json", "old");
  fs::create_symlink("real/target.json", dir / "link.json");
  fs::create_symlink("real/new.json", dir / "dangling.json");
  writeFileAtomic(dir / "link.json", "through the link");
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(spopt::test::readFileBytes(dir / "real/target.json") == "through the link");
  writeFileAtomic(dir / "dangling.json", "created at the target");
  CHECK(fs::is_symlink(dir / "dangling.json"));
  CHECK(spopt::test::readFileBytes(dir / "real/new.json") == "created at the target");
  CHECK(dir.entries() ==
        std::vector<std::string>{"dangling.json", "link.json", "real", "real/new.json", "real/target.json"});
}

TEST_CASE("AtomicFile: an unnamed temp leaves no entry while it is written", "[io][transaction]") {
  TempDir dir("unnamed");
  AtomicFile f(dir / "out.json");
  f.write(std::string(3 << 20, 'x'));  // past the buffer: on disk already
  f.finish();
  if (f.unnamed()) CHECK(dir.entries().empty());
  else CHECK(dir.entries().size() == 1);  // a filesystem without O_TMPFILE: the named temp
  f.publish();
  CHECK(dir.entries() == std::vector<std::string>{"out.json"});
  CHECK(fs::file_size(dir / "out.json") == (3u << 20));
}

TEST_CASE("removeTreeSignalSafe removes a folder with everything in it", "[io][transaction]") {
  TempDir dir("tree");
  fs::create_directories(dir / "t/a/b/c");
  for (int i = 0; i < 300; ++i) writePlain(dir / ("t/a/f" + std::to_string(i) + std::string(40, 'n')), "x");
  writePlain(dir / "t/a/b/c/deep", "x");
  fs::create_symlink("/", dir / "t/root-link");  // a link is removed, never followed
  CHECK(removeTreeSignalSafe((dir / "t").c_str()));
  CHECK(dir.entries().empty());
  CHECK(fs::exists("/"));
}

TEST_CASE("Streamed input is limited by --max-input-bytes", "[io][source]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "0123456789", 10) == 10);
  ::close(fds[1]);
  std::string path = "/dev/fd/" + std::to_string(fds[0]);
  setMaxInputBytes(9);
  try {
    openSource(path);
    FAIL("no error past the limit");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == path + ": input exceeds --max-input-bytes=9");
  }
  ::close(fds[0]);
  REQUIRE(::pipe(fds) == 0);
  REQUIRE(::write(fds[1], "0123456789", 10) == 10);
  ::close(fds[1]);
  setMaxInputBytes(10);  // exactly the limit is fine
  path = "/dev/fd/" + std::to_string(fds[0]);
  auto src = openSource(path);
  CHECK(src->text() == "0123456789");
  ::close(fds[0]);
  setMaxInputBytes(0);  // back to the default
  CHECK(maxInputBytes() == defaultMaxInputBytes());
}
