#pragma once
// Paddle's program files: one reader per format, one table that `sp-opt import` and `sp-opt export`
// dispatch through (docs/paddle.md).
//
// A reader turns one file into one format-v1 program object ({"blocks": [...], ...}, no "rank": the
// job assembly numbers ranks) held as nlohmann::ordered_json, so that every key keeps its order and
// whatever the format has no field for rides along under a preserved key ("paddle" at each level).
// The assembly (assemble.h) finds rings in the programs themselves (c_comm_init ops), so a reader
// returns the program and nothing else unless it knows rings another way (comm_inits).
//
// HOW TO ADD A FORMAT: write, in its own file under lib/io/paddle/,
//   bool looksLikeX(std::string_view bytes);                                  // content sniffing
//   ImportedProgram readX(const std::string& path, std::string_view bytes);   // throws InputError
// and, if it can be written back,
//   std::string writeX(const nlohmann::ordered_json& program, const std::string& where);
// then add one row for it to the table in formats.cpp. Nothing else changes: `import --from`,
// `export --to`, detection and the error messages all read the table.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace spopt::paddle {

using Json = nlohmann::ordered_json;

// One c_comm_init (or c_comm_init_all) a startup program holds: this rank is position `rank` of
// ring `ring_id`, which has `nranks` members.
struct CommInit {
  int64_t ring_id = 0;
  int64_t nranks = 0;
  int64_t rank = 0;
  std::string where;  // "block 0 op 12" (line:col for text formats), for messages
};

struct ImportedProgram {
  std::string path;    // as the user named it
  std::string format;  // the table's name for the format it was read as
  Json program;        // a format-v1 program object without "rank"
  // Rings this file defines, when the reader knows them otherwise than through c_comm_init ops
  // in `program` (the assembly also scans the program itself).
  std::vector<CommInit> comm_inits;
  std::vector<std::string> notes;  // what the reader added or assumed, for the user (one line each)
};

using DetectFn = bool (*)(std::string_view bytes);
using ReadFn = ImportedProgram (*)(const std::string& path, std::string_view bytes);
// Serialises one program (a format-v1 program object as an export reads it from the job);
// `where` names it in messages ("job.json: /programs/2"). Throws InputError.
using WriteFn = std::string (*)(const Json& program, const std::string& where);

struct ProgramFormat {
  std::string_view name;       // --from / --to value: "pdmodel", "paddle-text", "pir-json", "pir-text"
  std::string_view extension;  // of exported files: "pdmodel" writes DIR/rank_N.pdmodel
  std::string_view summary;
  DetectFn detect;  // tried in table order; the first that says yes wins
  ReadFn read;
  WriteFn write;    // null: import only
};

const std::vector<ProgramFormat>& programFormats();
// Names of the formats, comma separated, for help and messages ("pdmodel, paddle-text, ...").
std::string formatNames(bool writable_only = false);
// The format named `name`; throws InputError naming the known ones.
const ProgramFormat& formatByName(std::string_view name, bool for_writing = false);

// Reads a file as `forced_format` (empty: detected from its content). Throws InputError.
ImportedProgram readProgramFile(const std::string& path, std::string_view forced_format = {});

}  // namespace spopt::paddle
