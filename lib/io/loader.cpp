// The threaded loading: finding the programs, parsing them on several threads, then resolving
// names. The JSON walk itself is io/job_parser.cpp; name resolution is the IR's (ir/resolve.h).
#include "io/loader.h"

#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ops/op_def.h"

#include "io/job_parser.h"
#include "io/source.h"
#include "io/text_reader.h"
#include "io/top_level_scan.h"
#include "ir/resolve.h"
#include "support/parallel.h"

namespace spopt {
namespace {

// ---- chunked loading -------------------------------------------------------------------------
// A job's bulk is its programs, one per rank (io/top_level_scan.h). Parsing each as a document of
// its own lets ranks load on several threads and keeps simdjson's structural index to one program.

// The programs the scan has found, handed to the parsing threads as soon as each is found.
class FoundPrograms {
 public:
  struct Item {
    Span span;
    size_t index = 0;
    std::unique_ptr<Program> program;
    std::exception_ptr error;
  };
  void add(const Span& span) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back({span, items_.size(), nullptr, nullptr});
    cv_.notify_one();
  }
  void finish(bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ok_ = ok;
    cv_.notify_all();
  }
  // The next program to parse; null when the scan is over (or failed, so nothing more is wanted).
  Item* next() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return taken_ < items_.size() || done_; });
    if (taken_ == items_.size() || !ok_) return nullptr;
    return &items_[taken_++];
  }
  std::deque<Item>& items() { return items_; }  // once every thread is joined

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;  // a deque: items stay put while the scan appends
  size_t taken_ = 0;
  bool done_ = false, ok_ = true;
};

// Loads a job through its top-level layout: threads parse programs as the scan finds them, each
// releasing the file's bytes behind it, and the rest of the document is parsed once the scan
// ends. Returns false when the scan gives up (the caller parses the whole document instead).
bool loadChunked(Job& job, const Source& src, const std::string& name) {
  std::string_view text = src.text();
  unsigned threads = unsigned(std::clamp<size_t>(threadLimit(), 1, 16));
  job.load_arenas.resize(threads + 1);  // the last one is the header's
  FoundPrograms found;
  std::mutex layouts;
  auto worker = [&](unsigned t) {
    JobParser parser(job, name, job.load_arenas[t], &layouts);
    while (FoundPrograms::Item* item = found.next()) {
      try {
        auto p = std::make_unique<Program>();
        p->job = &job;
        p->position = item->index;
        const Span& e = item->span;
        ReleaseBehind parsed(src, text.data() + e.begin);
        parser.releaseBehind(&parsed);
        parser.parseProgram(text.data() + e.begin, e.end - e.begin, src.capacity() - e.begin, item->index, *p);
        parsed.finish(text.data() + e.end);
        item->program = std::move(p);
      } catch (...) {
        item->error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  ReleaseBehind scanned(src, text.data());
  std::optional<TopLevel> top;
  try {
    top = scanTopLevel(text, &scanned, [&](const Span& s) { found.add(s); });
  } catch (...) {
    found.finish(false);
    for (auto& th : pool) th.join();
    throw;
  }
  found.finish(bool(top));
  std::exception_ptr header_error;
  if (top) {
    try {  // the header, while the programs parse
      std::string skeleton;
      skeleton.reserve(top->programs.begin + 2 + (text.size() - top->programs.end) + simdjson::SIMDJSON_PADDING);
      skeleton.append(text.substr(0, top->programs.begin)).append("[]").append(text.substr(top->programs.end));
      size_t skeleton_len = skeleton.size();
      skeleton.append(simdjson::SIMDJSON_PADDING, ' ');
      Arena& arena = job.load_arenas[threads];
      std::string_view kept = arena.store(skeleton);  // the header's views point here
      JobParser(job, name, arena).parseSkeleton(kept.data(), skeleton_len);
    } catch (...) {
      header_error = std::current_exception();
    }
  }
  for (auto& th : pool) th.join();
  if (!top) return false;
  if (header_error) std::rethrow_exception(header_error);
  for (auto& item : found.items()) {
    if (item.error) std::rethrow_exception(item.error);  // the first failing program in file order
    job.programs.push_back(std::move(item.program));
  }
  return true;
}

namespace {
// A source less its UTF-8 byte order mark: some editors write one; JSON forbids it and the job
// is written back without it.
class WithoutBom : public Source {
 public:
  explicit WithoutBom(std::shared_ptr<Source> inner) : inner_(std::move(inner)) {}
  std::string_view text() const override { return inner_->text().substr(3); }
  void release(const char* from, const char* to) const override { inner_->release(from, to); }

 private:
  std::shared_ptr<Source> inner_;
};
}  // namespace

// The job keeps no view of the source's bytes (the IR's text lives in its arenas), so the file is
// unmapped, or its copy freed, when loading ends.
std::unique_ptr<Job> load(std::shared_ptr<Source> src, const std::string& name, const LoadOptions& opts) {
  if (src->text().starts_with("\xEF\xBB\xBF")) src = std::make_shared<WithoutBom>(std::move(src));
  // The text form (io/text_reader.h) is told apart by its first line; a JSON job starts with "{".
  if (looksLikeTextJob(src->text())) return readTextJob(src->text(), name, opts);
  auto job = std::make_unique<Job>();
  job->path = name;
  if (!loadChunked(*job, *src, name))
    JobParser(*job, name, job->arena).parseDocument(src->text().data(), src->text().size(), src->capacity());
  job->rebuildIndices();
  inferDialects(*job);
  if (opts.resolve) resolveNames(*job);
  return job;
}

}  // namespace

std::unique_ptr<Job> loadJob(const std::string& path, const LoadOptions& opts) { return load(openSource(path), path, opts); }

std::unique_ptr<Job> loadJobFromText(std::string_view text, const std::string& display_name, const LoadOptions& opts) {
  return load(copySource(text), display_name, opts);
}

}  // namespace spopt