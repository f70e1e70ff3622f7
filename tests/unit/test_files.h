#pragma once
// A whole file as bytes (empty when it cannot be read: the test's own CHECKs then fail on it).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace spopt::test {

inline std::string readFileBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace spopt::test
