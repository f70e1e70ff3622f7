#pragma once
// Everything `sp-opt analyze` says about a job: communication (per collective, ring, kind and
// phase), compute (FLOPs per phase and layer), activation memory, and the simulated step. A
// library: passes that schedule or trade memory read the same numbers.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/activations.h"
#include "analysis/collectives.h"
#include "analysis/cost_model.h"
#include "analysis/memory.h"
#include "analysis/simulate.h"
#include "ir/ir.h"

namespace spopt {

struct CommTotals {
  int64_t count = 0, payload = 0, wire = 0;
  double seconds = 0;  // modelled cost, wherever it runs
  void add(int64_t p, int64_t w, double s) {
    ++count;
    payload += p;
    wire += w;
    seconds += s;
  }
};

struct CollectiveUse {
  const Op* op = nullptr;
  uint32_t position = 0;  // index in its block
  CollectiveKind kind = CollectiveKind::AllReduce;
  int64_t ring = 0, group_size = 1;
  Phase phase = Phase::Unknown;
  std::string layer;
  int64_t payload = 0, wire = 0;
  double seconds = 0;
};

struct RankReport {
  int64_t rank = 0;
  int64_t ops = 0;
  // Communication.
  std::vector<CollectiveUse> collectives;  // program order
  CommTotals comm;
  std::map<CollectiveKind, CommTotals> comm_by_kind;
  std::map<int64_t, CommTotals> comm_by_ring;
  std::array<CommTotals, kPhaseCount> comm_by_phase{};
  int64_t unknown_size = 0;
  // Compute.
  double flops = 0;
  // Ops outside the op catalogue, by type: costed as one FLOP per output element (cost_model.h),
  // which may be far off; the report says how much of the program they are.
  std::map<std::string, int64_t> uncatalogued;
  double uncatalogued_flops = 0;
  std::array<double, kPhaseCount> flops_by_phase{};
  std::map<std::string, double> flops_by_layer;
  // Memory: the shared liveness's profile of the entry block (no-need-buffer slots respected,
  // persistables always live), and the activations kept for backward.
  MemoryProfile memory;
  const Op* peak_op = nullptr;
  ActivationReport activations;
};

struct JobReport {
  std::string path;
  HardwareModel model;
  int64_t world_size = 1;
  std::vector<RankReport> ranks;
  StepTimeline timeline;
  bool simulated = false;
};

struct AnalyzeOptions {
  bool simulate = true;
};

JobReport analyzeJob(const Job& job, const HardwareModel& model, const AnalyzeOptions& opts = {});

}  // namespace spopt
