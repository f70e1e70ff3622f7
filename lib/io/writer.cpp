#include "io/writer.h"

#include "ir/prefetch.h"

#include <charconv>
#include <cstring>
#include <memory>

#include "io/atomic_file.h"
#include "ir/json_text.h"

namespace spopt {
namespace {

// Appends JSON text to a fixed buffer that goes to the file whenever it fills, so that writing a
// multi-gigabyte job needs a megabyte of memory. Without a file, text accumulates in a string.
class Out {
 public:
  explicit Out(AtomicFile* file) : file_(file), buf_(std::make_unique_for_overwrite<char[]>(kSize)), p_(buf_.get()), end_(p_ + kSize) {}
  Out& operator<<(std::string_view s) {
    if (size_t(end_ - p_) < s.size()) return spill(s);
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  Out& operator<<(char c) {
    if (p_ == end_) flush();
    *p_++ = c;
    return *this;
  }
  Out& operator<<(int64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    return *this << std::string_view(tmp, size_t(r.ptr - tmp));
  }
  void str(std::string_view s) {
    if (isPlain(s)) {
      *this << '"' << s << '"';
    } else {
      *this << quoteJson(s);
    }
  }
  void key(std::string_view k) {
    str(k);
    *this << ':';
  }
  void flush() {
    std::string_view done(buf_.get(), size_t(p_ - buf_.get()));
    if (file_)
      file_->write(done);
    else
      text_ += done;
    p_ = buf_.get();
  }
  std::string take() {
    flush();
    return std::move(text_);
  }

 private:
  static constexpr size_t kSize = 1 << 20;
  Out& spill(std::string_view s) {
    flush();
    if (s.size() >= kSize) {  // bigger than the buffer: straight through
      if (file_)
        file_->write(s);
      else
        text_ += s;
      return *this;
    }
    return *this << s;
  }
  // True when the string needs no escaping (one pass; find_first_of would scan per character).
  static bool isPlain(std::string_view s) {
    bool plain = true;
    for (unsigned char c : s) plain &= (c >= 0x20 && c != '"' && c != '\\');
    return plain;
  }
  AtomicFile* file_;
  std::unique_ptr<char[]> buf_;
  char* p_;
  char* end_;
  std::string text_;
};

void indent(Out& o, int level) {
  o << '\n';
  for (int i = 0; i < level; ++i) o << "  ";
}

void intArray(Out& o, const std::vector<int64_t>& v) {
  o << '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o << ',';
    o << v[i];
  }
  o << ']';
}

void object(Out& o, const JsonObject& obj) {
  if (!obj.compactText().empty()) {
    o << obj.compactText();
    return;
  }
  o << '{';
  const auto& items = obj.items();
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) o << ',';
    o << '"' << items[i].key << "\":" << items[i].raw;
  }
  o << '}';
}

void slots(Out& o, const std::vector<Slot>& s) {
  o << '{';
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) o << ',';
    o.key(s[i].name);
    o << '[';
    for (size_t j = 0; j < s[i].args.size(); ++j) {
      if (j) o << ',';
      o.str(s[i].args[j].name);
    }
    o << ']';
  }
  o << '}';
}

// Writes the fields of an entity: known keys through `known`, unknown keys as raw text.
// `open`/`sep` control whether each key goes on its own indented line.
template <typename KnownFn>
void fields(Out& o, const Fields& fs, int level, bool multiline, KnownFn known) {
  o << '{';
  bool first = true;
  for (const Field& f : fs) {
    if (!first) o << ',';
    first = false;
    if (multiline) indent(o, level + 1);
    o.key(f.key);
    if (multiline) o << ' ';
    if (f.known())
      known(f.key);
    else
      o << f.raw;
  }
  if (multiline && !fs.empty()) indent(o, level);
  o << '}';
}

void writeVar(Out& o, const Var& v) {
  fields(o, v.fields, 0, false, [&](std::string_view k) {
    if (k == "name")
      o.str(v.name);
    else if (k == "shape")
      intArray(o, v.shape);
    else if (k == "dtype")
      o.str(dtypeName(v.dtype));
    else if (k == "persistable")
      o << (v.persistable ? "true" : "false");
    else if (k == "dist_attr")
      object(o, v.dist_attr);
  });
}

void writeOp(Out& o, const Op& op) {
  fields(o, op.fields, 0, false, [&](std::string_view k) {
    if (k == "type")
      o.str(op.type);
    else if (k == "inputs")
      slots(o, op.inputs);
    else if (k == "outputs")
      slots(o, op.outputs);
    else if (k == "attrs")
      object(o, op.attrs);
    else if (k == "dist_attr")
      object(o, op.dist_attr);
  });
}

// An array whose elements each start on their own line.
template <typename Range, typename Fn>
void lines(Out& o, const Range& items, int level, Fn each) {
  o << '[';
  bool first = true;
  for (const auto& item : items) {
    if (!first) o << ',';
    first = false;
    indent(o, level + 1);
    each(item);
  }
  if (!first) indent(o, level);
  o << ']';
}

void writeBlock(Out& o, const Block& b, int level) {
  fields(o, b.fields, level, true, [&](std::string_view k) {
    if (k == "idx")
      o << b.idx;
    else if (k == "parent_idx")
      o << b.parent_idx;
    else if (k == "vars") {
      o << '[';
      bool first = true;
      for (const auto& v : b.vars) {
        if (v->removed) continue;
        if (!first) o << ',';
        first = false;
        indent(o, level + 2);
        writeVar(o, *v);
          }
      if (!first) indent(o, level + 1);
      o << ']';
    } else if (k == "ops") {
      // Writing is a walk too: the slot arrays, arg names and attrs' text of the ops ahead are
      // asked for early (a rewritten job's new ops lie away from the loaded ones).
      const OpRange<const Op> in_order = b.inOrder();
      OpLookahead ahead(in_order, OpLookahead::Reads::Text);
      lines(o, in_order, level + 1, [&](const Op& op) {
        ahead.next();
        writeOp(o, op);
      });
    }
  });
}

void writeProgram(Out& o, const Program& p, int level) {
  fields(o, p.fields, level, true, [&](std::string_view k) {
    if (k == "rank") {
      o << p.rank;
    } else if (k == "fetch") {
      o << '[';
      for (size_t i = 0; i < p.fetch.size(); ++i) {
        if (i) o << ',';
        o.str(p.fetch[i]);
      }
      o << ']';
    } else if (k == "blocks") {
      lines(o, p.blocks, level + 1, [&](const auto& b) { writeBlock(o, *b, level + 2); });
    }
  });
}

void writeAll(Out& o, const Job& job) {
  fields(o, job.fields, 0, true, [&](std::string_view k) {
    if (k == "format")
      o.str(job.format);
    else if (k == "version")
      o << job.version;
    else if (k == "world_size")
      o << job.world_size;
    else if (k == "process_groups") {
      lines(o, job.groups, 1, [&](const ProcessGroup& g) {
        fields(o, g.fields, 0, false, [&](std::string_view gk) {
          if (gk == "ring_id")
            o << g.ring_id;
          else if (gk == "ranks")
            intArray(o, g.ranks);
        });
      });
    } else if (k == "programs") {
      lines(o, job.programs, 1, [&](const auto& p) { writeProgram(o, *p, 2); });
    }
  });
  o << '\n';
}

}  // namespace

void writeJob(const Job& job, AtomicFile& file) {
  Out o(&file);
  writeAll(o, job);
  o.flush();
}

void writeJobFile(const Job& job, const std::string& path) {
  AtomicFile file(path);
  writeJob(job, file);
  file.commit();
}

std::string jobToString(const Job& job) {
  Out o(nullptr);
  writeAll(o, job);
  return o.take();
}

std::string varToJson(const Var& v) {
  Out o(nullptr);
  writeVar(o, v);
  return o.take();
}

std::string opToJson(const Op& op) {
  Out o(nullptr);
  writeOp(o, op);
  return o.take();
}

}  // namespace spopt
