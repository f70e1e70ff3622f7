#include "io/text_writer.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <deque>

#include "io/atomic_file.h"
#include "ir/json_text.h"

namespace spopt {

bool isTextWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '@' ||
         c == '-';
}

bool isTextWord(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!isTextWordChar(c)) return false;
  return true;
}

bool isTextJobPath(std::string_view path) {
  constexpr std::string_view ext = ".sptxt";
  return path.size() > ext.size() && path.substr(path.size() - ext.size()) == ext;
}

namespace {

// An object's compact JSON text: its loaded text while unedited (no copy), else rebuilt.
class ObjectTexts {
 public:
  std::string_view of(const JsonObject& o) {
    if (!o.compactText().empty()) return o.compactText();
    return rebuilt_.emplace_back(o.toJson());
  }

 private:
  std::deque<std::string> rebuilt_;
};

// Alias names are words made from what the alias stands for, unique across the job's aliases.
std::string aliasBase(std::string_view wanted, std::string_view fallback) {
  std::string s;
  for (char c : wanted) s += (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
  return s.empty() ? std::string(fallback) : s;
}

class TextWriter {
 public:
  TextWriter(const Job& job, const TextWriteOptions& opts) : job_(job), fold_ranks_(opts.fold_ranks) {
    for (const auto& p : job.programs)
      if (!opts.rank || p->rank == *opts.rank) programs_.push_back(p.get());
  }

  std::string run() {
    collectAliases();
    out_ += kTextMagic;
    out_ += ' ' + std::to_string(job_.version) + '\n';
    out_ += "world_size " + std::to_string(job_.world_size) + '\n';
    for (const ProcessGroup& g : job_.groups) {
      out_ += "group ring_id=" + std::to_string(g.ring_id) + " ranks=";
      intList(g.ranks);
      out_ += '\n';
    }
    for (const auto& [raw, name] : mesh_order_) out_ += "mesh #" + name + " = " + std::string(raw) + '\n';
    for (const auto& [raw, name] : dist_order_) {
      out_ += "dist #" + name + " = ";
      kvObject(*dist_objects_.at(raw), true);
      out_ += '\n';
    }
    if (fold_ranks_)
      foldedPrograms();
    else
      for (const Program* p : programs_) program(*p);
    return std::move(out_);
  }

 private:
  const Job& job_;
  bool fold_ranks_;
  std::vector<const Program*> programs_;
  std::string out_;
  ObjectTexts texts_;
  // Mesh aliases by the mesh's raw JSON; op dist_attr aliases by the dist_attr's compact text.
  absl::flat_hash_map<std::string_view, std::string> meshes_, dists_;
  std::vector<std::pair<std::string_view, std::string>> mesh_order_, dist_order_;
  absl::flat_hash_map<std::string_view, const JsonObject*> dist_objects_;
  absl::flat_hash_set<std::string> taken_;
  absl::flat_hash_map<std::string, int> next_suffix_;

  std::string uniqueName(const std::string& base) {
    std::string name = base;
    int& suffix = next_suffix_[base];
    while (taken_.count(name)) name = base + "_" + std::to_string(++suffix);
    taken_.insert(name);
    return name;
  }

  void noteMesh(const JsonObject& dist) {
    const std::string_view* mesh = dist.find("process_mesh");
    if (!mesh || meshes_.count(*mesh)) return;
    std::string dims;
    if (auto names = rawMember(*mesh, "dim_names"))
      if (auto list = rawToStringArray(*names))
        for (const auto& d : *list) dims += (dims.empty() ? "" : "_") + d;
    std::string name = uniqueName(aliasBase(dims, "mesh"));
    meshes_.emplace(*mesh, name);
    mesh_order_.emplace_back(*mesh, name);
  }

  // Meshes get an alias each; an op dist_attr gets one when two or more ops share it, named
  // after its stream so that the stream stays readable on every op line.
  void collectAliases() {
    absl::flat_hash_map<std::string_view, int> uses;
    std::vector<std::pair<std::string_view, const JsonObject*>> first_seen;
    for (const Program* p : programs_)
      for (const auto& b : p->blocks) {
        for (const auto& v : b->vars)
          if (!v->removed && v->hasDistAttr()) noteMesh(v->dist_attr);
        for (const Op& op : b->ops) {
          if (!op.hasDistAttr()) continue;
          noteMesh(op.dist_attr);
          std::string_view text = texts_.of(op.dist_attr);
          if (uses[text]++ == 0) first_seen.emplace_back(text, &op.dist_attr);
        }
      }
    for (const auto& [text, obj] : first_seen) {
      if (uses[text] < 2) continue;
      auto stream = obj->getString("execution_stream");
      std::string name = uniqueName(aliasBase(stream.value_or(""), "dist"));
      dists_.emplace(text, name);
      dist_order_.emplace_back(text, name);
      dist_objects_.emplace(text, obj);
    }
  }

  void name(std::string_view s) {
    if (isTextWord(s))
      out_ += s;
    else
      out_ += quoteJson(s);
  }
  // Object keys are kept escaped as in JSON: quoting needs no second escape.
  void key(std::string_view k) {
    if (isTextWord(k)) {
      out_ += k;
    } else {
      out_ += '"';
      out_ += k;
      out_ += '"';
    }
  }
  void intList(const std::vector<int64_t>& v) {
    out_ += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out_ += ',';
      out_ += std::to_string(v[i]);
    }
    out_ += ']';
  }
  void kvObject(const JsonObject& obj, bool dist) {
    out_ += '{';
    bool first = true;
    for (const Member& m : obj.items()) {
      if (!first) out_ += ", ";
      first = false;
      key(m.key);
      out_ += '=';
      auto alias = dist && m.key == "process_mesh" ? meshes_.find(m.raw) : meshes_.end();
      if (alias != meshes_.end())
        out_ += '#' + alias->second;
      else
        out_ += m.raw;
    }
    out_ += '}';
  }
  void distAttr(const JsonObject& obj, bool op) {
    out_ += " dist=";
    if (op) {
      auto it = dists_.find(texts_.of(obj));
      if (it != dists_.end()) {
        out_ += '#' + it->second;
        return;
      }
    }
    kvObject(obj, true);
  }
  void slots(const std::vector<Slot>& ss) {
    for (size_t i = 0; i < ss.size(); ++i) {
      if (i) out_ += ", ";
      name(ss[i].name);
      out_ += "=[";
      for (size_t j = 0; j < ss[i].args.size(); ++j) {
        if (j) out_ += ", ";
        name(ss[i].args[j].name);
      }
      out_ += ']';
    }
  }

  void var(const Var& v) {
    out_ += "    var ";
    name(v.name);
    out_ += " : ";
    out_ += dtypeName(v.dtype);
    intList(v.shape);
    if (v.persistable) out_ += " persistable";
    if (v.hasDistAttr()) distAttr(v.dist_attr, false);
    out_ += '\n';
  }
  void op(const Op& o) {
    out_ += "    {";
    slots(o.outputs);
    out_ += "} = ";
    name(o.type);
    out_ += '(';
    slots(o.inputs);
    out_ += ')';
    if (!o.attrs.empty()) {
      out_ += ' ';
      kvObject(o.attrs, false);
    }
    if (o.hasDistAttr()) distAttr(o.dist_attr, true);
    out_ += '\n';
  }
  // Consecutive ranks whose programs print the same, rank number aside, print once as
  // `rank A..B` (the SPMD shorthand), which the reader expands back to the same programs.
  void foldedPrograms() {
    std::vector<std::string> printed;  // each program without its "\nrank R"
    for (const Program* p : programs_) {
      std::string before = std::move(out_);
      out_.clear();
      program(*p);
      printed.push_back(out_.substr(6 + std::to_string(p->rank).size()));
      out_ = std::move(before);
    }
    for (size_t i = 0, j; i < printed.size(); i = j + 1) {
      for (j = i; j + 1 < printed.size() && programs_[j + 1]->rank == programs_[j]->rank + 1 && printed[j + 1] == printed[i];) ++j;
      out_ += "\nrank " + std::to_string(programs_[i]->rank);
      if (j > i) out_ += ".." + std::to_string(programs_[j]->rank);
      out_ += printed[i];
    }
  }
  void program(const Program& p) {
    out_ += "\nrank " + std::to_string(p.rank);
    if (hasField(p.fields, "fetch")) {
      out_ += " fetch=[";
      for (size_t i = 0; i < p.fetch.size(); ++i) {
        if (i) out_ += ", ";
        name(p.fetch[i]);
      }
      out_ += ']';
    }
    out_ += " {\n";
    for (const auto& b : p.blocks) {
      out_ += "  block " + std::to_string(b->idx) + " parent=" + std::to_string(b->parent_idx) + " {\n";
      for (const auto& v : b->vars)
        if (!v->removed) var(*v);
      for (const Op& o : b->ops) op(o);
      out_ += "  }\n";
    }
    out_ += "}\n";
  }
};

}  // namespace

std::string jobToText(const Job& job, const TextWriteOptions& opts) { return TextWriter(job, opts).run(); }

void writeJobText(const Job& job, AtomicFile& out, const TextWriteOptions& opts) { out.write(jobToText(job, opts)); }

void writeJobTextFile(const Job& job, const std::string& path, const TextWriteOptions& opts) {
  std::string text = jobToText(job, opts);
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace spopt
