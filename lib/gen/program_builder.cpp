#include "gen/program_builder.h"

#include <stdexcept>

namespace spopt::gen {

std::string Naming::unique(std::string_view prefix) {
  auto it = next_.find(std::string(prefix));
  if (it == next_.end()) it = next_.emplace(std::string(prefix), 0).first;
  return std::string(prefix) + "_" + std::to_string(it->second++);
}

ProgramBuilder::ProgramBuilder(JsonEmitter& out, const Topology& topo, Phase phase, std::string_view indent)
    : out_(out), topo_(topo), phase_(phase), indent_(indent), writer_(*this) {
  op_dist_attr_ = ",\"dist_attr\":{\"process_mesh\":" + topo.meshJson() +
                  ",\"chunk_id\":0,\"execution_stream\":\"default\",\"stream_priority\":0,"
                  "\"scheduling_priority\":0,\"event_to_record\":\"\",\"events_to_wait\":[]}}";
}

void ProgramBuilder::entry() {
  if (count_++) out_.raw(',');
  out_.raw(indent_);
}

Tensor ProgramBuilder::declare(std::string name, std::vector<int64_t> shape, std::vector<Axis> axes, DType dtype,
                               bool persistable) {
  if (shape.size() != axes.size()) throw std::logic_error("gen: var " + name + " has a sharding of another rank");
  Tensor t{std::move(name), std::move(shape), std::move(axes), dtype, persistable};
  if (phase_ != Phase::Vars) return t;
  out_.maybeFlush();
  entry();
  out_.raw("{\"name\":");
  out_.string(t.name);
  out_.raw(",\"shape\":");
  out_.intArray(t.shape);
  out_.raw(",\"dtype\":");
  out_.string(dtypeName(t.dtype));
  out_.raw(t.persistable ? ",\"persistable\":true" : ",\"persistable\":false");
  out_.raw(",\"dist_attr\":{\"process_mesh\":");
  out_.raw(topo_.meshJson());
  out_.raw(",\"dims_mapping\":[");
  for (size_t i = 0; i < t.axes.size(); ++i) {
    if (i) out_.raw(',');
    out_.integer(topo_.meshDim(t.axes[i]));
  }
  out_.raw("],\"chunk_id\":0}}");
  return t;
}

Tensor ProgramBuilder::grad(const Tensor& t) { return declare(t.name + "@GRAD", t.shape, t.axes, t.dtype); }

Tensor ProgramBuilder::gradPart(const Tensor& t, int index) {
  return declare(t.name + "@GRAD@RENAME@block0@" + std::to_string(index), t.shape, t.axes, t.dtype);
}

Tensor ProgramBuilder::like(const Tensor& t) { return declare(names_.tmp(), t.shape, t.axes, t.dtype); }

OpWriter& ProgramBuilder::op(std::string_view type) {
  writer_.finish();
  if (phase_ != Phase::Ops) return writer_;
  out_.maybeFlush();
  entry();
  out_.raw("{\"type\":");
  out_.string(type);
  out_.raw(",\"inputs\":{");
  writer_.active_ = true;
  writer_.section_ = OpWriter::kInputs;
  writer_.first_in_section_ = true;
  writer_.role_ = role_;
  writer_.scope_ = scope_;
  return writer_;
}

void ProgramBuilder::finish() { writer_.finish(); }

void OpWriter::enter(Section s) {
  if (s < section_) throw std::logic_error("gen: op slots and attributes must come as inputs, outputs, attrs");
  while (section_ < s) {
    // Close the current object and open the next one.
    section_ = Section(section_ + 1);
    b_.out_.raw(section_ == kOutputs ? "},\"outputs\":{" : "},\"attrs\":{");
    first_in_section_ = true;
  }
}

void OpWriter::key(std::string_view k) {
  if (!first_in_section_) b_.out_.raw(',');
  first_in_section_ = false;
  b_.out_.string(k);
  b_.out_.raw(':');
}

void OpWriter::slotNames(std::string_view slot, const Tensor* const* ts, size_t n) {
  key(slot);
  b_.out_.raw('[');
  for (size_t i = 0; i < n; ++i) {
    if (i) b_.out_.raw(',');
    b_.out_.string(ts[i]->name);
  }
  b_.out_.raw(']');
}

OpWriter& OpWriter::in(std::string_view slot, std::initializer_list<const Tensor*> ts) {
  if (!active_) return *this;
  enter(kInputs);
  slotNames(slot, ts.begin(), ts.size());
  return *this;
}

OpWriter& OpWriter::in(std::string_view slot, const std::vector<Tensor>& ts) {
  if (!active_) return *this;
  std::vector<const Tensor*> ptrs;
  for (const auto& t : ts) ptrs.push_back(&t);
  enter(kInputs);
  slotNames(slot, ptrs.data(), ptrs.size());
  return *this;
}

OpWriter& OpWriter::out(std::string_view slot, std::initializer_list<const Tensor*> ts) {
  if (!active_) return *this;
  enter(kOutputs);
  slotNames(slot, ts.begin(), ts.size());
  return *this;
}

OpWriter& OpWriter::out(std::string_view slot, const std::vector<Tensor>& ts) {
  if (!active_) return *this;
  std::vector<const Tensor*> ptrs;
  for (const auto& t : ts) ptrs.push_back(&t);
  enter(kOutputs);
  slotNames(slot, ptrs.data(), ptrs.size());
  return *this;
}

OpWriter& OpWriter::flag(std::string_view k, bool v) {
  if (!active_) return *this;
  enter(kAttrs);
  key(k);
  b_.out_.boolean(v);
  return *this;
}

OpWriter& OpWriter::integer(std::string_view k, int64_t v) {
  if (!active_) return *this;
  enter(kAttrs);
  key(k);
  b_.out_.integer(v);
  return *this;
}

OpWriter& OpWriter::real(std::string_view k, double v) {
  if (!active_) return *this;
  enter(kAttrs);
  key(k);
  b_.out_.number(v);
  return *this;
}

OpWriter& OpWriter::text(std::string_view k, std::string_view v) {
  if (!active_) return *this;
  enter(kAttrs);
  key(k);
  b_.out_.string(v);
  return *this;
}

OpWriter& OpWriter::ints(std::string_view k, const std::vector<int64_t>& v) {
  if (!active_) return *this;
  enter(kAttrs);
  key(k);
  b_.out_.intArray(v);
  return *this;
}

OpWriter& OpWriter::role(int r) {
  role_ = r;
  return *this;
}

OpWriter& OpWriter::scope(std::string_view s) {
  scope_ = s;
  return *this;
}

void OpWriter::finish() {
  if (!active_) return;
  enter(kAttrs);
  key("op_role");
  b_.out_.integer(role_);
  key("op_namescope");
  b_.out_.string(scope_);
  b_.out_.raw('}');
  b_.out_.raw(b_.op_dist_attr_);
  active_ = false;
}

}  // namespace spopt::gen
