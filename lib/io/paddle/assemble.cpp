// Job assembly: one program per rank, rings from the startup programs (docs/paddle.md).
//
// A Paddle ring_id is local to a process: in a 2-D data-parallel job, ring 1 of ranks 0 and 1 and
// ring 1 of ranks 2 and 3 are two different communicators. c_gen_nccl_id's endpoint /
// other_endpoints say which ranks share one, so the ranks claiming a ring_id are split into the
// groups they connect; the first group keeps the ring_id, every other one gets a fresh job-wide
// ring_id, the ops of its ranks are renumbered to it, and the group keeps Paddle's own number under
// "paddle": {"ring_id": ...} so that `export` writes each program back with its own numbers.
#include "io/paddle/assemble.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "ops/op_def.h"
#include "support/error.h"

namespace spopt::paddle {
namespace {

struct Claim {
  int64_t rank = 0;  // the job rank (the main program's position)
  CommInit init;
  std::string file;
};

// Calls fn(op, "block B op I") for every op of a program object.
template <typename Fn>
void forEachOp(Json& program, Fn fn) {
  if (!program.contains("blocks")) return;
  auto& blocks = program["blocks"];
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (!blocks[b].contains("ops")) continue;
    auto& ops = blocks[b]["ops"];
    for (size_t i = 0; i < ops.size(); ++i) fn(ops[i], "block " + std::to_string(b) + " op " + std::to_string(i));
  }
}

int64_t intAttr(const Json& op, const char* name, int64_t fallback) {
  if (!op.contains("attrs") || !op["attrs"].contains(name)) return fallback;
  const Json& v = op["attrs"][name];
  return v.is_number_integer() ? v.get<int64_t>() : fallback;
}
std::string stringAttr(const Json& op, const char* name) {
  if (!op.contains("attrs") || !op["attrs"].contains(name) || !op["attrs"][name].is_string()) return "";
  return op["attrs"][name].get<std::string>();
}
std::string opType(const Json& op) { return op.contains("type") && op["type"].is_string() ? op["type"].get<std::string>() : ""; }

struct UnionFind {
  std::vector<size_t> parent;
  size_t add() {
    parent.push_back(parent.size());
    return parent.size() - 1;
  }
  size_t find(size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(size_t a, size_t b) { parent[find(a)] = find(b); }
};

}  // namespace

namespace {
// Programs sp-opt exported from a job carry that job's own keys and rings ("job", cmd_export):
// given alone (no --startup, no --ring), they make that job again.
std::optional<Json> jobFromExport(std::vector<ImportedProgram>& mains) {
  for (const auto& m : mains)
    if (!m.program.contains("job") || !m.program["job"].is_object()) return std::nullopt;
  Json job = mains.front().program["job"];
  // Ops name Paddle's ring numbers again (export wrote them): back to the job's, rank by rank.
  for (size_t r = 0; r < mains.size(); ++r) {
    std::map<int64_t, int64_t> job_ring;
    for (const auto& g : job.value("process_groups", Json::array())) {
      bool member = false;
      for (const auto& x : g.value("ranks", Json::array())) member |= x == Json(r);
      if (!member || !g.contains("paddle") || !g["paddle"].contains("ring_id")) continue;
      job_ring[g["paddle"]["ring_id"].get<int64_t>()] = g["ring_id"].get<int64_t>();
    }
    mains[r].program.erase("job");
    if (job_ring.empty()) continue;
    forEachOp(mains[r].program, [&](Json& op, const std::string&) {
      if (!op.contains("attrs") || !op["attrs"].contains("ring_id") || !op["attrs"]["ring_id"].is_number_integer()) return;
      auto it = job_ring.find(op["attrs"]["ring_id"].get<int64_t>());
      if (it != job_ring.end()) op["attrs"]["ring_id"] = it->second;
    });
  }
  Json programs = Json::array();
  for (size_t r = 0; r < mains.size(); ++r) {
    Json program;
    program["rank"] = r;
    for (auto& [key, value] : mains[r].program.items()) program[key] = std::move(value);
    programs.push_back(std::move(program));
  }
  job["programs"] = std::move(programs);
  return job;
}
}  // namespace

Json assembleJob(std::vector<ImportedProgram> mains, const AssembleOptions& options) {
  if (mains.empty()) throw InputError("", "", "no programs to import");
  if (options.startups.empty() && options.rings.empty())
    if (auto job = jobFromExport(mains)) return *job;
  for (auto& m : mains) m.program.erase("job");
  const auto& startups = options.startups;
  if (!startups.empty() && startups.size() != mains.size())
    throw InputError(startups.back().path, "",
                     std::to_string(mains.size()) + " main programs but " + std::to_string(startups.size()) +
                         " startup programs: give one startup program per rank, in the same order");
  const int64_t nprograms = static_cast<int64_t>(mains.size());

  // Each rank's claims (ring_id, position, nranks) and the endpoints its c_gen_nccl_id ops name.
  std::vector<Claim> claims;
  std::map<std::pair<int64_t, int64_t>, std::vector<std::string>> peers;  // (rank, ring) -> endpoints
  std::map<std::string, int64_t> rank_of_endpoint;
  for (int64_t r = 0; r < nprograms; ++r) {
    ImportedProgram& source = startups.empty() ? mains[r] : const_cast<ImportedProgram&>(startups[r]);
    for (const auto& init : source.comm_inits) claims.push_back({r, init, source.path});
    forEachOp(source.program, [&](Json& op, const std::string& where) {
      const OpDef* def = resolveOp(opType(op)).def;
      if (def == &opDef("comm_init")) {
        claims.push_back({r, {intAttr(op, "ring_id", 0), intAttr(op, "nranks", 0), intAttr(op, "rank", 0), where}, source.path});
      } else if (def == &opDef("comm_init_all")) {
        // One communicator over `devices`, the ranks in that order: the program of rank r is
        // device r's (a `rank` attribute, where a Paddle version writes one, says so directly).
        const Json* devices = op.contains("attrs") && op["attrs"].contains("devices") ? &op["attrs"]["devices"] : nullptr;
        int64_t n = devices && devices->is_array() && !devices->empty() ? int64_t(devices->size()) : nprograms;
        claims.push_back({r, {intAttr(op, "ring_id", 0), n, intAttr(op, "rank", r), where}, source.path});
      } else if (def == &opDef("gen_nccl_id")) {
        std::string own = stringAttr(op, "endpoint");
        if (own.empty()) return;
        rank_of_endpoint.emplace(own, r);
        auto& list = peers[{r, intAttr(op, "ring_id", 0)}];
        list.push_back(own);
        if (op["attrs"].contains("other_endpoints") && op["attrs"]["other_endpoints"].is_array())
          for (const auto& e : op["attrs"]["other_endpoints"])
            if (e.is_string()) list.push_back(e.get<std::string>());
      }
    });
  }

  // Split each ring_id's claimants into the communicators their endpoints connect.
  // A ring given by --ring replaces what c_comm_init says about that ring_id.
  std::map<int64_t, std::vector<size_t>> claims_of_ring;
  for (size_t i = 0; i < claims.size(); ++i)
    if (!options.rings.count(claims[i].init.ring_id)) claims_of_ring[claims[i].init.ring_id].push_back(i);
  int64_t next_ring = 0;
  for (const auto& [ring, _] : claims_of_ring) next_ring = std::max(next_ring, ring + 1);
  for (const auto& [ring, _] : options.rings) next_ring = std::max(next_ring, ring + 1);

  Json groups = Json::array();
  std::map<std::pair<int64_t, int64_t>, int64_t> job_ring;  // (rank, paddle ring) -> job ring
  for (const auto& [ring, members] : claims_of_ring) {
    UnionFind uf;
    std::map<std::string, size_t> endpoint_node;
    auto node = [&](const std::string& e) {
      auto it = endpoint_node.find(e);
      return it != endpoint_node.end() ? it->second : endpoint_node.emplace(e, uf.add()).first->second;
    };
    std::vector<size_t> claim_node;
    for (size_t c : members) {
      auto it = peers.find({claims[c].rank, ring});
      size_t n = node(it != peers.end() ? it->second.front() : "rank:" + std::to_string(claims[c].rank));
      if (it != peers.end())
        for (const auto& e : it->second) uf.join(n, node(e));
      claim_node.push_back(n);
    }
    // Without endpoints every claimant of the ring_id is one group.
    bool any_endpoints = false;
    for (size_t c : members) any_endpoints |= peers.count({claims[c].rank, ring}) > 0;
    std::map<size_t, std::vector<size_t>> components;  // root -> claims, in rank order
    for (size_t k = 0; k < members.size(); ++k)
      components[any_endpoints ? uf.find(claim_node[k]) : 0].push_back(members[k]);
    std::vector<std::vector<size_t>> ordered;
    for (auto& [root, list] : components) ordered.push_back(list);
    std::sort(ordered.begin(), ordered.end(),
              [&](const auto& a, const auto& b) { return claims[a.front()].rank < claims[b.front()].rank; });
    for (size_t g = 0; g < ordered.size(); ++g) {
      const auto& list = ordered[g];
      int64_t id = g == 0 ? ring : next_ring++;
      int64_t nranks = claims[list.front()].init.nranks;
      std::vector<int64_t> by_position(std::max<int64_t>(nranks, 0), -1);
      for (size_t c : list) {
        const Claim& cl = claims[c];
        std::string where = cl.file + ": " + cl.init.where + ": ring " + std::to_string(ring);
        if (cl.init.nranks != nranks)
          throw InputError(cl.file, "", cl.init.where + ": ring " + std::to_string(ring) + " has nranks " +
                                            std::to_string(cl.init.nranks) + " here but " + std::to_string(nranks) +
                                            " on rank " + std::to_string(claims[list.front()].rank));
        if (cl.init.rank < 0 || cl.init.rank >= nranks)
          throw InputError(cl.file, "", cl.init.where + ": ring " + std::to_string(ring) + ": position " +
                                            std::to_string(cl.init.rank) + " is outside [0, " + std::to_string(nranks) + ")");
        int64_t& slot = by_position[cl.init.rank];
        if (slot >= 0)
          throw InputError(cl.file, "", cl.init.where + ": ring " + std::to_string(ring) + ": ranks " +
                                            std::to_string(slot) + " and " + std::to_string(cl.rank) +
                                            " both claim position " + std::to_string(cl.init.rank));
        slot = cl.rank;
        job_ring[{cl.rank, ring}] = id;
      }
      for (size_t p = 0; p < by_position.size(); ++p)
        if (by_position[p] < 0)
          throw InputError(claims[list.front()].file, "", claims[list.front()].init.where + ": ring " + std::to_string(ring) +
                                                              " has nranks " + std::to_string(nranks) +
                                                              " but no rank claims position " + std::to_string(p));
      Json group;
      group["ring_id"] = id;
      group["ranks"] = by_position;
      if (id != ring) group["paddle"] = {{"ring_id", ring}};
      groups.push_back(std::move(group));
    }
  }
  for (const auto& [ring, ranks] : options.rings) {
    std::set<int64_t> seen;
    for (int64_t r : ranks) {
      if (!seen.insert(r).second)
        throw InputError("--ring", "", "ring " + std::to_string(ring) + " lists rank " + std::to_string(r) + " twice");
      if (r < 0) throw InputError("--ring", "", "ring " + std::to_string(ring) + ": negative rank");
      job_ring[{r, ring}] = ring;
    }
    groups.push_back({{"ring_id", ring}, {"ranks", ranks}});
  }
  std::sort(groups.begin(), groups.end(), [](const Json& a, const Json& b) { return a["ring_id"] < b["ring_id"]; });

  // Number every op's ring_id the job's way; a ring nobody defined is an error.
  int64_t world_size = nprograms;
  for (const auto& g : groups)
    for (const auto& r : g["ranks"]) world_size = std::max(world_size, r.get<int64_t>() + 1);
  Json programs = Json::array();
  for (int64_t r = 0; r < nprograms; ++r) {
    forEachOp(mains[r].program, [&](Json& op, const std::string& where) {
      if (!op.contains("attrs") || !op["attrs"].contains("ring_id") || !op["attrs"]["ring_id"].is_number_integer()) return;
      int64_t ring = op["attrs"]["ring_id"].get<int64_t>();
      auto it = job_ring.find({r, ring});
      if (it == job_ring.end())
        throw InputError(mains[r].path, "", where + " (" + opType(op) + "): ring " + std::to_string(ring) +
                                                " is defined by no c_comm_init (--startup) or --ring ID=RANKS");
      if (it->second != ring) op["attrs"]["ring_id"] = it->second;
    });
    Json program;
    program["rank"] = r;
    for (auto& [key, value] : mains[r].program.items()) program[key] = std::move(value);
    programs.push_back(std::move(program));
  }
  Json job;
  job["format"] = "sp-opt.program";
  job["version"] = 1;
  job["world_size"] = world_size;
  job["process_groups"] = std::move(groups);
  job["programs"] = std::move(programs);
  return job;
}

}  // namespace spopt::paddle
