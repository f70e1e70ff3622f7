#pragma once
// Small pieces shared by the Paddle readers and writers: JSON spellings of values JSON has no
// literal for (non-finite floats, non-UTF-8 bytes), dtype names, hex, protobuf enum names.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/paddle/formats.h"

namespace google::protobuf {
class EnumDescriptor;
}

namespace spopt::paddle {

// A float attr as the shortest decimal that reads back as the same float (0.1f -> 0.1, not
// 0.100000001490116); NaN and infinities as the strings "nan", "inf", "-inf".
Json floatToJson(float f);
Json doubleToJson(double d);
double jsonToDouble(const Json& j);  // a number or one of those strings
// Bytes as a JSON string when they are UTF-8, else {"hex": "..."}.
Json bytesToJson(const std::string& bytes);
std::string jsonToBytes(const Json& j);
std::string toHex(std::string_view bytes);
std::string fromHex(std::string_view hex);  // throws std::invalid_argument

std::string enumName(const google::protobuf::EnumDescriptor* d, int value);  // "FP32"; unknown: "17"
int enumValue(const google::protobuf::EnumDescriptor* d, const std::string& name);  // throws

// Paddle dtype (VarType enum name, "FP32") -> sp-opt dtype, and whether that is exact. A dtype
// sp-opt lacks maps to a stand-in of the same kind (int8/int16 -> int32, complex -> float64, ...);
// the importer keeps the Paddle name beside it.
std::pair<std::string, bool> dtypeFromPaddle(const std::string& paddle_name);
std::string dtypeToPaddle(const std::string& spopt_dtype);  // "float32" -> "FP32"

// Paddle's shape inference writes unknown dims as any negative number (-1 x 512 = -512); format
// v1 says -1. shapeFromPaddle gives the v1 shape and, when it differs, keeps Paddle's dims in
// paddle["dims"]; dimsToPaddle gives them back while they still match the shape.
Json shapeFromPaddle(const std::vector<int64_t>& dims, Json& paddle);
std::vector<int64_t> dimsToPaddle(const Json& shape, const Json& paddle);

// The first place where `bytes` is not well-formed protobuf wire format ("byte 812: field 1
// length 4096 runs past the end of the file (truncated?)"), or nullopt.
std::optional<std::string> findWireProblem(std::string_view bytes);

}  // namespace spopt::paddle
