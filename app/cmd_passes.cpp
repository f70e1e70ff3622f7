// sp-opt passes: the registered passes, their descriptions, options and statistics (each from its one
// declaration), and the default pipeline.
#include <iostream>
#include <memory>

#include "command.h"
#include "passes/pipeline.h"

namespace spopt::app::cmd_passes {
namespace {

int runPasses(bool all) {
  const PassRegistry& registry = PassRegistry::builtin();
  std::cout << "default pipeline: " << kDefaultPipeline << "\n";
  for (const PipelineAlias& a : kPipelineAliases)
    std::cout << "alias " << a.name << ": " << a.expansion << "\n      " << a.description << "\n";
  for (const PassInfo* p : registry.all()) {
    std::cout << "\n" << p->name << "\n  " << p->description << "\n";
    for (const OptionSpec& o : p->options) {
      if (o.hidden && !all) continue;
      std::cout << "  " << o.name << "=<" << optionKindName(o.kind) << "> (default " << o.default_text << ")"
                << (o.hidden ? " [hidden]" : "") << "\n      " << o.help << "\n";
    }
    for (const StatisticSpec& st : p->statistics)
      std::cout << "  statistic " << st.name << " <" << st.type << ", " << statUnitName(st.unit) << ">\n      " << st.help << "\n";
  }
  return 0;
}

const Registrar reg{{"passes", "List the rewrite passes, their options, statistics and the default pipeline", "sp-opt passes",
                     [](CLI::App& sub) {
                       auto all = std::make_shared<bool>(false);
                       sub.add_flag("--all", *all, "Also list hidden (testing) options");
                       return [all] { return runPasses(*all); };
                     },
                     /*reads_input=*/false}};

}  // namespace
}  // namespace spopt::app::cmd_passes
