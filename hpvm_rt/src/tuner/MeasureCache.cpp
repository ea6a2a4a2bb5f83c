// MeasureCache.cpp - the measurement cache behind --resume: reading a
// state directory back, appending each new measurement as it is made and
// keeping profiled outputs beside it.
#include "tuner/MeasureCache.h"

#include "base/Errors.h"
#include "base/FileUtil.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <sys/stat.h>

namespace hpvm::rt::tuner {

using json = nlohmann::json;

MeasureCache::MeasureCache(const std::string& dir, const json& context,
                           bool fresh, bool resume, bool quiet)
    : dir_(dir) {
  std::string jsonl = dir_ + "/measurements.jsonl";
  struct stat st;
  bool exists = ::stat(jsonl.c_str(), &st) == 0;
  if (resume && !exists)
    throw UserError(fmt::format("--resume: {} has no earlier run to resume "
                                "(no measurements.jsonl)",
                                dir_));
  if (exists && !fresh) {
    std::ifstream in(jsonl);
    std::string line;
    bool first = true, match = false;
    while (std::getline(in, line)) {
      json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded())
        break; // a line cut short by a kill: everything before it stands
      if (first) {
        first = false;
        match = j == context;
        if (!match)
          break;
        continue;
      }
      records_[j.value("key", "")] = j;
    }
    if (!match) {
      if (resume)
        throw UserError(fmt::format(
            "--resume: {} was made for another program or other settings "
            "(batch size, threads, images, QoS); run without --resume to "
            "start again",
            dir_));
      records_.clear();
      exists = false;
    } else if (!quiet && !records_.empty()) {
      std::printf("reusing %zu measurements from %s\n", records_.size(),
                  dir_.c_str());
    }
  }
  if (::mkdir(dir_.c_str(), 0777) != 0 && errno != EEXIST)
    throw UserError(fmt::format("{}: cannot create the state directory: {}",
                                dir_, std::strerror(errno)));
  ::mkdir((dir_ + "/outputs").c_str(), 0777);
  if (!exists || fresh) {
    // Start the file anew with the context line.
    std::string text = context.dump() + "\n";
    for (auto& [key, rec] : records_)
      text += rec.dump() + "\n";
    writeFileAtomic(jsonl, text);
  }
  file_ = std::fopen(jsonl.c_str(), "ab");
  if (!file_)
    throw UserError(
        fmt::format("{}: cannot append: {}", jsonl, std::strerror(errno)));
}

MeasureCache::~MeasureCache() {
  if (file_)
    std::fclose(file_);
}

std::string MeasureCache::key(const std::string& desc) {
  int n = occurrences_[desc]++;
  return fmt::format("{}#{}", desc, n);
}

const json* MeasureCache::find(const std::string& key) const {
  auto it = records_.find(key);
  return it == records_.end() ? nullptr : &it->second;
}

void MeasureCache::add(const std::string& key, json record,
                       const std::vector<float>* outputs) {
  record["key"] = key;
  if (outputs) {
    std::string name = fmt::format("outputs/{}.f32", records_.size());
    writeFileAtomic(
        dir_ + "/" + name,
        std::string_view(reinterpret_cast<const char*>(outputs->data()),
                         outputs->size() * sizeof(float)));
    record["outputs"] = name;
  }
  std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0)
    throw UserError(fmt::format("{}/measurements.jsonl: cannot write: {}", dir_,
                                std::strerror(errno)));
  records_[key] = std::move(record);
  ++added_;
}

std::vector<float> MeasureCache::outputs(const json& record,
                                         size_t count) const {
  std::vector<float> out(count);
  std::string path = dir_ + "/" + record.value("outputs", "");
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(out.data()),
               std::streamsize(count * sizeof(float))))
    throw UserError(fmt::format("{}: cannot read cached outputs (remove the "
                                "state directory or pass --fresh)",
                                path));
  return out;
}

} // namespace hpvm::rt::tuner
