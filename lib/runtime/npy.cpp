#include "runtime/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "io/atomic_file.h"
#include "support/error.h"

namespace spopt::rt {
namespace {

const char* descrOf(const Tensor& t) {
  switch (t.storage()) {
    case Storage::F32: return "<f4";
    case Storage::F64: return "<f8";
    case Storage::I64: return "<i8";
    case Storage::U8: return t.dtype() == DType::Bool ? "|b1" : "|u1";
  }
  return "|u1";
}

std::string shapeTuple(const std::vector<int64_t>& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += std::to_string(s[i]) + (s.size() == 1 ? "," : (i + 1 < s.size() ? ", " : ""));
  return out + ")";
}

// The value text after 'key': in the header dict, up to the next top-level comma or brace.
std::string dictValue(const std::string& header, const std::string& key, const std::string& name) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) throw InputError(name, "", "npy header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) throw InputError(name, "", "npy header is malformed");
  size_t i = colon + 1;
  while (i < header.size() && header[i] == ' ') ++i;
  size_t end = i;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) throw InputError(name, "", "npy header is malformed");
    ++end;
  } else {
    while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  }
  return header.substr(i, end - i);
}

}  // namespace

void writeNpy(const std::string& path, const Tensor& t) {
  std::string header = std::string("{'descr': '") + descrOf(t) + "', 'fortran_order': False, 'shape': " + shapeTuple(t.shape()) + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n' padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char((header.size() >> 8) & 0xff);
  out += header;
  AtomicFile f(path);
  f.write(out);
  if (t.numel()) f.write(std::string_view(static_cast<const char*>(t.raw()), t.bytes()));
  f.commit();
}

Tensor parseNpy(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& why) -> Tensor { throw InputError(name, "", why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return fail("not a .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = size_t(static_cast<unsigned char>(bytes[8])) | size_t(static_cast<unsigned char>(bytes[9])) << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail("truncated .npy header");
    for (int i = 0; i < 4; ++i) hlen |= size_t(static_cast<unsigned char>(bytes[size_t(8 + i)])) << (8 * i);
    hstart = 12;
  } else {
    return fail(".npy version " + std::to_string(major) + " is not supported");
  }
  if (bytes.size() < hstart + hlen) return fail("truncated .npy header");
  std::string header = bytes.substr(hstart, hlen);
  std::string descr = dictValue(header, "descr", name);
  std::string fortran = dictValue(header, "fortran_order", name);
  std::string shape_text = dictValue(header, "shape", name);
  if (fortran.find("True") != std::string::npos) return fail("Fortran-order .npy files are not supported (save with C order)");
  DType dtype;
  size_t file_esz;
  if (descr == "'<f4'") dtype = DType::Float32, file_esz = 4;
  else if (descr == "'<f8'") dtype = DType::Float64, file_esz = 8;
  else if (descr == "'<i8'") dtype = DType::Int64, file_esz = 8;
  else if (descr == "'<i4'") dtype = DType::Int32, file_esz = 4;
  else if (descr == "'|u1'") dtype = DType::UInt8, file_esz = 1;
  else if (descr == "'|b1'") dtype = DType::Bool, file_esz = 1;
  else return fail(".npy dtype " + descr + " is not supported (float32, float64, int64, int32, uint8, bool)");
  std::vector<int64_t> shape;
  {
    std::string inner = shape_text.size() >= 2 ? shape_text.substr(1, shape_text.size() - 2) : "";
    std::stringstream ss(inner);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      size_t a = tok.find_first_not_of(' '), b = tok.find_last_not_of(' ');
      if (a == std::string::npos) continue;
      tok = tok.substr(a, b - a + 1);
      if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos) return fail("bad .npy shape " + shape_text);
      shape.push_back(std::stoll(tok));
    }
  }
  Tensor t(dtype, shape);
  const size_t data_at = hstart + hlen;
  if (bytes.size() - data_at != size_t(t.numel()) * file_esz)
    return fail(".npy data holds " + std::to_string(bytes.size() - data_at) + " bytes, shape " + shape_text + " needs " +
                std::to_string(size_t(t.numel()) * file_esz));
  if (dtype == DType::Int32) {  // widened to the int64 storage
    auto* dst = t.data<int64_t>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      int32_t v;
      std::memcpy(&v, bytes.data() + data_at + size_t(i) * 4, 4);
      dst[i] = v;
    }
  } else if (t.numel()) {
    std::memcpy(t.raw(), bytes.data() + data_at, t.bytes());
  }
  return t;
}

Tensor readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open .npy file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parseNpy(ss.str(), path);
}

}  // namespace spopt::rt
