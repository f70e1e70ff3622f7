#pragma once
// A program's fetch list in PIR files. PIR has no program-level fetch list: Paddle 3 fetches a
// value with a `pd_op.fetch` op. Export writes one such op per fetch-list var that no fetch op
// already reads, marked with kFetchListAttr; import turns each marked op back into its fetch-list
// entry, so a job keeps its fetch list through a PIR file, and Paddle running the file fetches the
// same values.
#include <string>

#include "io/pir/pir_common.h"

namespace spopt::pir {

inline constexpr const char* kFetchListAttr = "spopt_fetch_list";

// `program` (format v1, one block) with a marked pd_op.fetch op appended for each fetch-list var
// that is not the result of a fetch op in it; the result of each is a new var "<var>@fetch".
ojson withFetchOps(const ojson& program);

// Removes the marked fetch ops (and their result vars) from a program import just read, and puts
// each op's operand in the fetch list in its result's place. A marked op that is not a fetch of
// one value, or a marker that is not `true`, is an InputError naming `file` and
// `ops_pointer`/N/... .
void restoreFetchList(ojson& program, const std::string& file, const std::string& ops_pointer);

}  // namespace spopt::pir
