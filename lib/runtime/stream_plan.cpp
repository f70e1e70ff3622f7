#include "runtime/stream_plan.h"

#include <unordered_map>

#include "analysis/collectives.h"
#include "analysis/p2p.h"
#include "ops/op_view.h"
#include "ir/op_role.h"
#include "runtime/op_site.h"

namespace spopt::rt {
namespace {

constexpr size_t kNone = size_t(-1);

}  // namespace

StreamPlan planStreams(const Program& p, const Block& entry, bool honour_streams, const FusedViews& fused) {
  StreamPlan plan;
  plan.names.push_back("default");
  std::unordered_map<std::string, uint32_t> index{{"default", 0}};
  for (const Op& op : entry.ops) {
    plan.ops.push_back(&op);
    uint32_t s = 0;
    if (honour_streams) {
      auto [it, fresh] = index.try_emplace(op.executionStream(), uint32_t(plan.names.size()));
      if (fresh) plan.names.push_back(it->first);
      s = it->second;
    }
    plan.stream_of.push_back(s);
  }
  const size_t n_ops = plan.ops.size(), n_streams = plan.names.size();
  plan.ops_of.resize(n_streams);
  std::vector<uint32_t> pos_in_stream(n_ops);
  for (size_t i = 0; i < n_ops; ++i) {
    pos_in_stream[i] = uint32_t(plan.ops_of[plan.stream_of[i]].size());
    plan.ops_of[plan.stream_of[i]].push_back(i);
  }
  plan.waits.resize(n_ops);
  plan.uses.assign(p.next_var_id, 0);
  plan.is_input.assign(p.next_var_id, 0);

  // A member of a fused buffer and the buffer are one value to the streams: replay copies a
  // member's write into its slice of the buffer and a write of the buffer out to every member
  // (fused_views.h), so an op reading the buffer (the fused all-reduce) waits for the ops writing
  // its members, and an op reading a member for the op writing the buffer. Paddle's executor
  // adds dependences of its own around coalesce_tensor too (its interpreter's DependencyBuilder).
  auto key = [&](const Var& v) -> uint32_t {
    const Var* buffer = fused.empty() ? nullptr : fused.bufferOf(v);
    return buffer ? buffer->id : v.id;
  };
  // Per var (per fused buffer, for its members): its last writer, and its last reader on each
  // stream since that write.
  const size_t vars = p.next_var_id;
  std::vector<size_t> last_writer(vars, kNone);
  std::vector<size_t> last_reader(plan.multi() ? vars * n_streams : 0, kNone);
  std::vector<uint32_t> counted(vars, uint32_t(-1));  // op position that last counted a use
  std::unordered_map<std::string, size_t> recorded;   // event name -> last op recording it
  std::unordered_map<int64_t, size_t> last_on_ring;
  std::vector<size_t> need(n_streams, kNone);  // per stream: latest op to wait for

  for (size_t i = 0; i < n_ops; ++i) {
    const Op& op = *plan.ops[i];
    const uint32_t s = plan.stream_of[i];
    auto wait_for = [&](size_t j) {
      if (j == kNone || plan.stream_of[j] == s) return;
      size_t& n = need[plan.stream_of[j]];
      if (n == kNone || j > n) n = j;
    };
    forEachArg(op.inputs, [&](const Var& v) {
      if (last_writer[v.id] == kNone) plan.is_input[v.id] = 1;
      if (plan.multi()) wait_for(last_writer[key(v)]);
    });
    if (plan.multi()) {
      forEachArg(op.outputs, [&](const Var& v) {
        wait_for(last_writer[key(v)]);
        for (size_t t = 0; t < n_streams; ++t) wait_for(last_reader[key(v) * n_streams + t]);
      });
      for (const std::string& e : eventsToWait(op))
        if (auto it = recorded.find(e); it != recorded.end()) wait_for(it->second);
      // One communicator per ring issues its collectives, sends and receives in program order.
      auto c = asCollective(op);
      auto p2p = c ? std::nullopt : asPointToPoint(op);
      if ((c && c->kind != CollectiveKind::Identity) || p2p) {
        auto [it, fresh] = last_on_ring.try_emplace(c ? c->ring_id : p2p->ring_id, i);
        if (!fresh) wait_for(std::exchange(it->second, i));
      }
      if (std::string e = eventToRecord(op); !e.empty()) recorded[e] = i;
      for (size_t t = 0; t < n_streams; ++t)
        if (need[t] != kNone) {
          plan.waits[i].push_back(StreamWait{uint32_t(t), pos_in_stream[need[t]] + 1, need[t]});
          need[t] = kNone;
        }
      forEachArg(op.inputs, [&](const Var& v) { last_reader[key(v) * n_streams + s] = i; });
      forEachArg(op.outputs, [&](const Var& v) {
        for (size_t t = 0; t < n_streams; ++t) last_reader[key(v) * n_streams + t] = kNone;
      });
    }
    forEachArg(op.outputs, [&](const Var& v) { last_writer[v.id] = i, last_writer[key(v)] = i; });
    auto use = [&](const Var& v) {
      if (counted[v.id] != uint32_t(i)) counted[v.id] = uint32_t(i), ++plan.uses[v.id];
    };
    for (const Slot& sl : op.inputs)
      if (readsBuffer(op, sl.name))
        for (const Arg& a : sl.args)
          if (a.var) use(*a.var);
    forEachArg(op.outputs, use);
  }
  return plan;
}

}  // namespace spopt::rt
