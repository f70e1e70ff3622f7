#pragma once
// NumPy .npy files (format 1.0/2.0, C order, little-endian): float32, float64, int64, int32 (read),
// uint8 and bool. Written through AtomicFile.
#include <string>

#include "runtime/tensor.h"

namespace spopt::rt {

// Writes `t` in its storage type (float16/bfloat16 vars are stored as float32 holding the format's values; int32 as int64).
void writeNpy(const std::string& path, const Tensor& t);
// Reads a file; throws InputError(path, "", message) on anything malformed or unsupported.
// The tensor's dtype follows the file: <f4 Float32, <f8 Float64, <i8/<i4 Int64, |u1 UInt8, |b1 Bool.
Tensor readNpy(const std::string& path);
// Same, from bytes in memory (tests, fuzzing); `name` is used in messages.
Tensor parseNpy(const std::string& bytes, const std::string& name);

}  // namespace spopt::rt
