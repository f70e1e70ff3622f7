#pragma once
// Reading and writing small JSON values kept as raw text. The IR keeps every attribute, dist
// attribute and unknown key as its JSON text, which is what makes rewriting lossless (integers stay
// integers, 1.0 stays 1.0, key order and unknown keys survive); these helpers read typed values out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spopt {

std::optional<int64_t> rawToInt(std::string_view raw);      // integers only ("3", not "3.0")
std::optional<double> rawToNumber(std::string_view raw);    // any JSON number
std::optional<bool> rawToBool(std::string_view raw);
std::optional<std::string> rawToString(std::string_view raw);  // unescaped JSON string
std::optional<std::vector<int64_t>> rawToIntArray(std::string_view raw);
std::optional<std::vector<double>> rawToNumberArray(std::string_view raw);  // any JSON numbers
std::optional<std::vector<std::string>> rawToStringArray(std::string_view raw);
// Attribute values the way replay's kernels read them (and the verifier, which checks that they
// can): an integer may be an integral number or a bool, a bool may be 0 or 1, a list of integers
// may be one integer.
std::optional<int64_t> rawToIntLenient(std::string_view raw);
std::optional<bool> rawToBoolLenient(std::string_view raw);
std::optional<std::vector<int64_t>> rawToIntsLenient(std::string_view raw);
// A member of a raw JSON object, as raw text (nullopt if raw is no object or lacks the key).
std::optional<std::string> rawMember(std::string_view raw_object, std::string_view key);

bool rawIsString(std::string_view raw);
// Whether two JSON texts hold the same value: numbers of the same kind compare by value, so
// -1e+09 and -1000000000.0 (two spellings of one float) are the same, while 1 and 1.0 are not (the
// format keeps integers and floats apart). Object members compare by key. Invalid text compares
// as text.
bool rawSameValue(std::string_view a, std::string_view b);

std::string quoteJson(std::string_view text);  // JSON string literal, escaped
// Printable ASCII without '"' or '\\': its JSON string literal is the text between quotes.
bool isPlainJsonText(std::string_view text);
std::string intToRaw(int64_t v);
std::string intArrayToRaw(const std::vector<int64_t>& v);
std::string stringArrayToRaw(const std::vector<std::string>& v);

}  // namespace spopt
