// .npy round trips for every supported dtype and shape kind; malformed files are bad input.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "runtime/npy.h"
#include "support/error.h"

using namespace spopt;
using namespace spopt::rt;

TEST_CASE("npy write then read gives the same tensor", "[runtime][npy]") {
  auto dir = std::filesystem::temp_directory_path() / ("spopt-npy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::UInt8, DType::Bool})
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {7}, {2, 3, 5}}) {
      Tensor t(dt, shape);
      auto* bytes = static_cast<unsigned char*>(t.raw());
      for (size_t i = 0; i < t.bytes(); ++i) bytes[i] = dt == DType::Bool ? (i % 2) : static_cast<unsigned char>(i * 37 + 11);
      std::string path = (dir / "t.npy").string();
      writeNpy(path, t);
      Tensor back = readNpy(path);
      REQUIRE(back.dtype() == dt);
      REQUIRE(back.shape() == shape);
      REQUIRE(std::memcmp(back.raw(), t.raw(), t.bytes()) == 0);
      // The header is padded so the data starts 64-byte aligned, as numpy writes it.
      REQUIRE((std::filesystem::file_size(path) - t.bytes()) % 64 == 0);
    }
  std::filesystem::remove_all(dir);
}

TEST_CASE("npy: int32 files widen to int64, bad files are bad input", "[runtime][npy]") {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + char(0) + header;
  int32_t vals[2] = {-5, 9};
  file.append(reinterpret_cast<const char*>(vals), 8);
  Tensor t = parseNpy(file, "a.npy");
  CHECK(t.data<int64_t>()[0] == -5);
  CHECK(t.data<int64_t>()[1] == 9);
  CHECK_THROWS_WITH(parseNpy(file.substr(0, file.size() - 1), "a.npy"), Catch::Contains("holds 7 bytes"));
  CHECK_THROWS_AS(parseNpy("not numpy", "b.npy"), InputError);
  std::string fortran = file;
  fortran.replace(fortran.find("False"), 5, "True ");
  CHECK_THROWS_WITH(parseNpy(fortran, "c.npy"), Catch::Contains("Fortran"));
  std::string f16 = file;
  f16.replace(f16.find("<i4"), 3, "<f2");
  CHECK_THROWS_WITH(parseNpy(f16, "d.npy"), Catch::Contains("not supported"));
}
