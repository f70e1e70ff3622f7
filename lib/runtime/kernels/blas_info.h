#pragma once
// Which OpenBLAS kernel set this process runs (for benchmark logs).
#include <string>

namespace spopt::rt {
std::string blasCoreName();
}
