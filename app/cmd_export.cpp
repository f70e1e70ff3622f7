// sp-opt export JOB --to pdmodel -o DIR: one Paddle program file per rank (DIR/rank_N.EXT).
#include <iostream>
#include <map>
#include <memory>

#include "command.h"
#include "io/loader.h"
#include "io/text_reader.h"
#include "io/pir/pir_names.h"
#include "io/writer.h"
#include "ops/translate.h"
#include "io/output_transaction.h"
#include "io/paddle/formats.h"
#include "io/source.h"
#include "support/error.h"

namespace spopt::app::cmd_export {
namespace {

struct Options {
  std::string job, to = "pdmodel", output;
};

int runExport(const Options& o) {
  const auto& format = paddle::formatByName(o.to, /*for_writing=*/true);
  // The loader checks the job (format v1, names resolve) and says where it is broken.
  // Read once (a FIFO or pipe cannot be read twice), then loaded and parsed from memory.
  std::string job_text = readInputFile(o.job);
  auto loaded = loadJobFromText(job_text, o.job);
  // A job exported to the other dialect's formats is translated first: legacy or current to PIR
  // as Paddle's translator does it, PIR to legacy ops for pdmodel and program text.
  bool to_pir = format.name.starts_with("pir");
  bool translate = false;
  for (const auto& p : loaded->programs) translate |= to_pir ? p->dialect != Dialect::Pir : p->dialect == Dialect::Pir;
  if (translate) {
    if (to_pir) {
      translateToPir(*loaded);
    } else {
      translateToLegacy(*loaded);
      pir::dropPirVarKeys(*loaded);  // value numbers and PIR types mean nothing in a legacy file
    }
    job_text = jobToString(*loaded);
  } else if (looksLikeTextJob(job_text)) {
    job_text = jobToString(*loaded);  // the writers below read the job's JSON form
  }
  keepUntilExit(std::move(loaded));
  paddle::Json job = paddle::Json::parse(job_text);

  // Ring ids the import renumbered (a Paddle ring_id is local to a process) go back to Paddle's.
  std::map<int64_t, int64_t> paddle_ring;
  for (const auto& g : job.value("process_groups", paddle::Json::array()))
    if (g.contains("paddle") && g["paddle"].contains("ring_id"))
      paddle_ring[g["ring_id"].get<int64_t>()] = g["paddle"]["ring_id"].get<int64_t>();

  // A job an import would not rebuild from the programs alone (rings, a world larger than the
  // programs, keys of its own, ranks out of order) rides along in every program as "job", which
  // the writer keeps where the format has room (pdmodel: the spopt field) and import restores.
  paddle::Json job_info = job;
  job_info["programs"] = nullptr;
  bool plain = job.value("process_groups", paddle::Json::array()).empty() &&
               job.value("world_size", 0) == static_cast<int64_t>(job["programs"].size());
  std::vector<std::string> standard = {"format", "version", "world_size", "process_groups", "programs"}, keys;
  for (const auto& [key, value] : job.items()) keys.push_back(key);
  plain &= keys == standard || keys == std::vector<std::string>{"format", "version", "world_size", "programs"};
  for (size_t i = 0; i < job["programs"].size(); ++i)
    plain &= job["programs"][i].value("rank", -1) == static_cast<int64_t>(i);

  std::vector<std::pair<std::string, std::string>> files;  // path, bytes: all made before any is written
  auto& programs = job["programs"];
  for (size_t i = 0; i < programs.size(); ++i) {
    auto& program = programs[i];
    if (!paddle_ring.empty())
      for (auto& block : program["blocks"])
        for (auto& op : block["ops"]) {
          if (!op.contains("attrs") || !op["attrs"].contains("ring_id") || !op["attrs"]["ring_id"].is_number_integer()) continue;
          auto it = paddle_ring.find(op["attrs"]["ring_id"].get<int64_t>());
          if (it != paddle_ring.end()) op["attrs"]["ring_id"] = it->second;
        }
    if (!plain) program["job"] = job_info;
    std::string bytes = format.write(program, o.job);
    files.emplace_back(o.output + "/rank_" + std::to_string(program["rank"].get<int64_t>()) + "." +
                           std::string(format.extension),
                       std::move(bytes));
  }
  OutputTransaction outputs;  // every rank's file, or none (and no folder made for them)
  outputs.makeFolders(o.output);
  for (const auto& [path, bytes] : files) outputs.file(path, bytes);
  keepUntilExit(std::make_unique<paddle::Json>(std::move(job)));
  std::cout << "wrote " << files.size() << " " << format.name << " file" << (files.size() == 1 ? "" : "s") << " to "
            << o.output << "\n";
  outputs.commit();  // the message reached stdout, or no file appears
  return kExitOk;
}

const Registrar reg{{"export", "Write a job as Paddle program files, one per rank: " + paddle::formatNames(true),
                     "sp-opt export job.json --to pdmodel -o out/", [](CLI::App& sub) {
                       auto o = std::make_shared<Options>();
                       sub.add_option("job", o->job, "Job file")->required();
                       sub.add_option("--to", o->to, "Output format: " + paddle::formatNames(true));
                       sub.add_option("-o,--output", o->output, "Output directory (rank_N.EXT per program)")->required();
                       return [o] { return runExport(*o); };
                     }}};

}  // namespace
}  // namespace spopt::app::cmd_export
