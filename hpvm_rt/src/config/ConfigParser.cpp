// ConfigParser.cpp - parses HPVM configuration files (grammar in Config.h)
// into ConfigFile (config/Configuration.h), resolving ops and knobs
// through Ops.def.
#include "config/Config.h"

#include "base/Errors.h"
#include "base/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace hpvm::rt {

namespace {

/// One whitespace-separated token with its 1-based column.
struct Token {
  std::string_view text;
  int column = 0;
};

/// One line of the file with its tokens.
struct Line {
  int number = 0;
  std::vector<Token> tokens;
  int endColumn = 1; ///< Column just past the last character.
};

std::vector<Line> splitLines(std::string_view text) {
  std::vector<Line> lines;
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    bool lastLine = end == std::string_view::npos;
    if (lastLine)
      end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    if (!raw.empty() && raw.back() == '\r')
      raw.remove_suffix(1);
    Line line;
    line.number = ++number;
    line.endColumn = static_cast<int>(raw.size()) + 1;
    size_t i = 0;
    while (i < raw.size()) {
      if (raw[i] == ' ' || raw[i] == '\t') {
        ++i;
        continue;
      }
      size_t start = i;
      while (i < raw.size() && raw[i] != ' ' && raw[i] != '\t')
        ++i;
      line.tokens.push_back(
          Token{raw.substr(start, i - start), static_cast<int>(start) + 1});
    }
    lines.push_back(std::move(line));
    pos = lastLine ? text.size() : end + 1;
  }
  return lines;
}

bool parseDouble(std::string_view s, double& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

bool parseInt(std::string_view s, int& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

/// "a, b and c" style list of the sorted, unique names.
std::string joinNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

std::string opNameList() {
  std::vector<std::string> names;
  for (int i = 0; i < kNumHpvmOps; ++i)
    names.push_back(opInfo(static_cast<HpvmOp>(i)).confName);
  return joinNames(names);
}

std::string knobNameList() {
  std::vector<std::string> names;
  for (const KnobInfo& k : allKnobs())
    names.push_back(k.confName);
  return joinNames(names);
}

bool isKnobName(std::string_view name) {
  for (const KnobInfo& k : allKnobs())
    if (name == k.confName)
      return true;
  return false;
}

/// True if every row named \p name is an exact-precision knob (HPVM ignores
/// the integer after such names).
bool isPrecisionOnlyName(std::string_view name) {
  bool any = false;
  for (const KnobInfo& k : allKnobs()) {
    if (name != k.confName)
      continue;
    if (k.spec.variant != Variant::Exact)
      return false;
    any = true;
  }
  return any;
}

const KnobInfo* firstKnobNamed(std::string_view name) {
  for (const KnobInfo& k : allKnobs())
    if (name == k.confName)
      return &k;
  return nullptr;
}

/// "121-138" style ranges of the ids named \p name.
std::string idRanges(std::string_view name) {
  std::vector<int> ids;
  for (const KnobInfo& k : allKnobs())
    if (name == k.confName)
      ids.push_back(k.id);
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    out += out.empty() ? "" : ", ";
    out +=
        j == i ? std::to_string(ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

std::string appliesText(KnobApplies applies) {
  switch (applies) {
  case KnobApplies::KnobAll:
    return "every op";
  case KnobApplies::KnobConv:
    return "conv only";
  case KnobApplies::KnobDense:
    return "conv, group_conv and mul only";
  }
  return "";
}

/// Recursive-descent parser over the split lines.
class Parser {
public:
  Parser(std::string_view text, const std::string& path)
      : path_(path), lines_(splitLines(text)) {}

  ConfigFile parse() {
    ConfigFile file;
    file.path = path_;
    parseBaseline(file);
    size_t i = 1;
    std::map<std::string, int, std::less<>> names;
    while (i < lines_.size()) {
      const Line& open = lines_[i];
      checkNotEmpty(open);
      if (open.tokens[0].text != "+++++")
        fail(open.number, open.tokens[0].column,
             fmt::format("expected '+++++' to open a configuration, "
                         "found '{}'",
                         open.tokens[0].text));
      expectEnd(open, 1, "'+++++'");
      Configuration config = parseBlock(i);
      auto [it, fresh] = names.emplace(config.name, config.line);
      if (!fresh)
        fail(config.line, 1,
             fmt::format("duplicate configuration name '{}' (first on line "
                         "{})",
                         config.name, it->second));
      file.configs.push_back(std::move(config));
    }
    if (file.configs.empty())
      fail(static_cast<int>(lines_.size()) + 1, 1,
           "expected '+++++' to open a configuration, found end of file");
    return file;
  }

private:
  [[noreturn]] void fail(int line, int column, const std::string& message) {
    throw UserError(path_, line, column, message);
  }

  void checkNotEmpty(const Line& line) {
    if (line.tokens.empty())
      fail(line.number, 1,
           "empty line; configuration files have no blank lines");
  }

  /// Fails if \p line has a token at index \p index or later.
  void expectEnd(const Line& line, size_t index, std::string_view after) {
    if (line.tokens.size() > index)
      fail(line.number, line.tokens[index].column,
           fmt::format("unexpected '{}' after {}; expected end of line",
                       line.tokens[index].text, after));
  }

  void parseBaseline(ConfigFile& file) {
    if (lines_.empty())
      fail(1, 1,
           "expected the baseline time (a number) on the first line, found "
           "end of file");
    const Line& line = lines_[0];
    checkNotEmpty(line);
    const Token& tok = line.tokens[0];
    if (!parseDouble(tok.text, file.baselineTime))
      fail(line.number, tok.column,
           fmt::format("bad baseline time '{}': expected a number", tok.text));
    expectEnd(line, 1, "the baseline time");
  }

  /// Parses the block whose "+++++" line is lines_[i]; leaves i after its
  /// "-----" line.
  Configuration parseBlock(size_t& i) {
    const int openLine = lines_[i].number;
    ++i;
    Configuration config;
    if (i >= lines_.size())
      fail(openLine + 1, 1,
           "expected a configuration header '<name> <speedup> <energy> "
           "<accuracy> <accuracy-loss>', found end of file");
    parseHeader(lines_[i], config);
    ++i;
    std::map<std::string, int, std::less<>> seen;
    int key = 1;
    while (true) {
      if (i >= lines_.size())
        fail(static_cast<int>(lines_.size()) + 1, 1,
             fmt::format("configuration '{}' (line {}) is not closed: "
                         "expected '-----', found end of file",
                         config.name, config.line));
      const Line& line = lines_[i];
      checkNotEmpty(line);
      std::string_view first = line.tokens[0].text;
      if (first == "-----") {
        if (config.nodes.empty())
          fail(
              line.number, 1,
              fmt::format("configuration '{}' has no node lines", config.name));
        expectEnd(line, 1, "'-----'");
        ++i;
        return config;
      }
      if (first == "+++++")
        fail(line.number, 1,
             fmt::format("configuration '{}' (line {}) is not closed: "
                         "expected '-----', found '+++++'",
                         config.name, config.line));
      NodeConfig node = parseNodeLine(line);
      auto [it, fresh] = seen.emplace(node.name, node.line);
      if (!fresh)
        fail(line.number, 1,
             fmt::format("duplicate node '{}' in configuration '{}' (first "
                         "on line {})",
                         node.name, config.name, it->second));
      node.key = key;
      key += static_cast<int>(node.ops.size());
      config.nodes.push_back(std::move(node));
      ++i;
    }
  }

  void parseHeader(const Line& line, Configuration& config) {
    checkNotEmpty(line);
    const Token& name = line.tokens[0];
    if (name.text == "+++++" || name.text == "-----")
      fail(line.number, name.column,
           fmt::format("expected a configuration header '<name> <speedup> "
                       "<energy> <accuracy> <accuracy-loss>', found '{}'",
                       name.text));
    config.name = std::string(name.text);
    config.line = line.number;
    static const char* const kFields[] = {"speedup", "energy", "accuracy",
                                          "accuracy loss"};
    double* values[] = {&config.speedup, &config.energy, &config.accuracy,
                        &config.accuracyLoss};
    for (size_t f = 0; f < 4; ++f) {
      if (line.tokens.size() <= f + 1)
        fail(line.number, line.endColumn,
             fmt::format("expected the {} in the header of configuration "
                         "'{}', found end of line",
                         kFields[f], config.name));
      const Token& tok = line.tokens[f + 1];
      if (!parseDouble(tok.text, *values[f]))
        fail(line.number, tok.column,
             fmt::format("bad {} '{}': expected a number", kFields[f],
                         tok.text));
    }
    expectEnd(line, 5, "the accuracy loss");
  }

  NodeConfig parseNodeLine(const Line& line) {
    NodeConfig node;
    node.line = line.number;
    const Token& id = line.tokens[0];
    int ordinal = 0;
    if (!parseInt(id.text, ordinal) || ordinal < 1)
      fail(line.number, id.column,
           fmt::format("bad node id '{}': expected a positive integer",
                       id.text));
    node.name = std::string(id.text);
    if (line.tokens.size() < 2)
      fail(line.number, line.endColumn,
           fmt::format("expected a device ('gpu' or 'cpu') after node id "
                       "'{}', found end of line",
                       id.text));
    const Token& device = line.tokens[1];
    if (device.text == "gpu")
      node.gpu = true;
    else if (device.text == "cpu")
      node.gpu = false;
    else
      fail(line.number, device.column,
           fmt::format("unknown device '{}'; expected 'gpu' or 'cpu'",
                       device.text));
    if (line.tokens.size() < 3)
      fail(line.number, line.endColumn,
           fmt::format("expected an op after device '{}', found end of line",
                       device.text));
    size_t t = 2;
    while (t < line.tokens.size()) {
      node.ops.push_back(parseOpKnob(line, t));
    }
    return node;
  }

  /// Parses "op knob-name integer" starting at token \p t; advances t.
  OpChoice parseOpKnob(const Line& line, size_t& t) {
    const Token& opTok = line.tokens[t];
    const OpInfo* op = opByConfName(opTok.text);
    if (!op) {
      if (isKnobName(opTok.text))
        fail(line.number, opTok.column,
             fmt::format("expected an op, found knob '{}'; each op takes "
                         "exactly one knob",
                         opTok.text));
      if (opTok.text == "pool_min")
        fail(line.number, opTok.column,
             "op 'pool_min' is not supported: HPVM has no kernel for it");
      fail(line.number, opTok.column,
           fmt::format("unknown op '{}'; expected one of: {}", opTok.text,
                       opNameList()));
    }
    OpChoice choice;
    choice.op = op->op;
    choice.line = line.number;
    choice.column = opTok.column;
    ++t;
    if (t >= line.tokens.size())
      fail(line.number, line.endColumn,
           fmt::format("expected a knob after op '{}' ('<knob-name> "
                       "<knob-id>'), found end of line",
                       opTok.text));
    const Token& nameTok = line.tokens[t];
    std::string_view name = nameTok.text;
    if (!isKnobName(name)) {
      if (name == "red_samp")
        fail(line.number, nameTok.column,
             "knob 'red_samp' is not supported: HPVM's reduction sampling "
             "(ids 41-46) has no tensor op in HPVM-C programs");
      if (name == "swing_level")
        fail(line.number, nameTok.column,
             "knob 'swing_level' is not supported: it selects PROMISE "
             "accelerator voltage levels (ids 1-7), hardware hpvm_rt does "
             "not target");
      if (opByConfName(name))
        fail(line.number, nameTok.column,
             fmt::format("expected a knob after op '{}', found op '{}'",
                         opTok.text, name));
      fail(line.number, nameTok.column,
           fmt::format("unknown knob '{}' for op '{}'; expected one of: {}",
                       name, opTok.text, knobNameList()));
    }
    ++t;
    if (t >= line.tokens.size())
      fail(line.number, line.endColumn,
           fmt::format("expected a knob id after '{}', found end of line",
                       name));
    const Token& idTok = line.tokens[t];
    int id = 0;
    if (!parseInt(idTok.text, id))
      fail(line.number, idTok.column,
           fmt::format("bad knob id '{}' for '{}': expected an integer",
                       idTok.text, name));
    ++t;
    const KnobInfo* knob = nullptr;
    if (isPrecisionOnlyName(name)) {
      knob = firstKnobNamed(name);
    } else {
      knob = knobById(id);
      if (!knob)
        fail(line.number, idTok.column,
             fmt::format("unknown knob id {} for '{}'; expected one of {}", id,
                         name, idRanges(name)));
      if (name != knob->confName)
        fail(line.number, idTok.column,
             fmt::format("knob id {} is '{}', not '{}'", id, knob->confName,
                         name));
    }
    if (!knobAppliesTo(*knob, op->op))
      fail(line.number, nameTok.column,
           fmt::format("knob '{}' ({}) does not apply to op '{}'; it "
                       "applies to {}",
                       name, knob->id, opTok.text, appliesText(knob->applies)));
    choice.knobId = knob->id;
    return choice;
  }

  const std::string& path_;
  std::vector<Line> lines_;
};

} // namespace

ConfigFile parseConfigText(std::string_view text, const std::string& path) {
  return Parser(text, path).parse();
}

ConfigFile parseConfigFile(const std::string& path) {
  return parseConfigText(
      readRegularFile(path, "configuration file", kMaxConfigFileBytes), path);
}

const Configuration& selectConfiguration(const ConfigFile& file,
                                         std::string_view selector) {
  for (const Configuration& config : file.configs)
    if (config.name == selector)
      return config;
  int index = 0;
  if (parseInt(selector, index) && index >= 0 &&
      static_cast<size_t>(index) < file.configs.size())
    return file.configs[static_cast<size_t>(index)];
  std::string names;
  for (size_t i = 0; i < file.configs.size(); ++i)
    names += (i ? ", " : "") + file.configs[i].name;
  bool numeric = parseInt(selector, index);
  throw UserError(fmt::format(
      "{}: no configuration named '{}'{} (the file has {} configuration{}: "
      "{})",
      file.path, selector,
      numeric ? fmt::format(" and no index {} (0-based)", selector) : "",
      file.configs.size(), file.configs.size() == 1 ? "" : "s", names));
}

const Configuration* selectByLoss(const ConfigFile& file, double limit) {
  const Configuration* best = nullptr;
  for (const Configuration& c : file.configs)
    if (c.accuracyLoss <= limit && (!best || c.speedup > best->speedup))
      best = &c;
  return best;
}

std::string knobConfName(int knobId) {
  const KnobInfo* knob = knobById(knobId);
  return knob ? knob->confName : fmt::format("knob{}", knobId);
}

std::string formatConfigFile(const ConfigFile& file) {
  std::string out = fmt::format("{}\n", file.baselineTime);
  for (size_t c = 0; c < file.configs.size(); ++c) {
    const Configuration& config = file.configs[c];
    out += fmt::format("+++++\n{} {} {} {} {}\n", config.name, config.speedup,
                       config.energy, config.accuracy, config.accuracyLoss);
    for (const NodeConfig& node : config.nodes) {
      out += fmt::format("{} {}", node.name, node.gpu ? "gpu" : "cpu");
      for (const OpChoice& op : node.ops)
        out += fmt::format(" {} {} {}", opInfo(op.op).confName,
                           knobConfName(op.knobId), op.knobId);
      out += '\n';
    }
    out += c + 1 < file.configs.size() ? "-----\n" : "-----";
  }
  return out;
}

} // namespace hpvm::rt
