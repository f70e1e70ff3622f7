#pragma once
// All of a command's outputs, committed together at the end or not at all. Each output is staged
// as it is declared (a temp file beside its destination, see atomic_file.h; a temp folder for a
// folder output), so that an unwritable destination fails before anything is produced. commit()
// first finishes every file (all bytes written and closed: a full disk fails here), then flushes
// standard output, and only then moves the outputs into place (renames, which need no space).
// Destroyed uncommitted (an exception, an early return), it removes every temp and every folder
// it created: a failing command leaves no output.
//
// Folder outputs (replay --dump DIR) are filled under a temp folder: DIR/.sp-opt.tmp.XXXXXX when
// DIR exists (its entries then replace same-named ones in DIR, others are kept), else
// PARENT/.NAME.tmp.XXXXXX renamed to DIR. A signal removes the temp folder (temp_cleanup.h);
// SIGKILL can leave it, as no folder can be unnamed.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/atomic_file.h"
#include "io/temp_cleanup.h"

namespace spopt {

class OutputTransaction {
 public:
  OutputTransaction() = default;
  ~OutputTransaction();
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;

  // A file output ("-" = standard output): write to the returned file (valid for the
  // transaction's life); it appears at commit().
  AtomicFile& file(const std::string& path);
  // A file output whose whole content is at hand.
  void file(const std::string& path, std::string_view content);
  // A folder output: fill the returned temp folder; its content appears in `path` at commit().
  std::string folder(const std::string& path);
  // A folder that file outputs go into (export -o DIR), with missing parents: created now, and
  // removed again if the transaction is not committed.
  void makeFolders(const std::string& path);
  // The user's name for a path inside a staged folder (for messages): the temp prefix replaced.
  std::string displayName(const std::string& staged_path) const;

  void commit();  // throws InputError; uncommitted outputs are then removed by the destructor
  bool committed() const { return committed_; }

 private:
  struct StagedFolder {
    std::string path, temp;
    bool existed;
    TempRegistration registration;
  };
  std::vector<std::unique_ptr<AtomicFile>> files_;
  std::vector<StagedFolder> folders_;
  std::vector<std::string> created_;  // folders made by makeFolders/folder, in creation order
  bool committed_ = false;
};

}  // namespace spopt
