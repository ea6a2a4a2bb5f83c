// TemplateRenderer.cpp - Mustache rendering with standalone-line trimming
// and a strict check that every tag names a context variable.
#include "codegen/TemplateRenderer.h"

#include "support/Diagnostics.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

namespace hpvm::fe {

namespace {

/// Stands for '\n' while kainjow renders.
constexpr char LineBreak = '\x01';

/// One {{tag}} of a template.
struct Tag {
  char kind = 0;    ///< '#', '^', '/', '!', '&', '{', '>', '=' or 0 (variable).
  std::string name; ///< Trimmed name.
  int line = 1;     ///< 1-based line of the tag in the original text.
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// Splits \p text into tags; throws on an unterminated tag.
std::vector<Tag> scanTags(const std::string& text, const std::string& name) {
  std::vector<Tag> tags;
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string::npos) {
    Tag tag;
    tag.line = 1 + static_cast<int>(
                       std::count(text.begin(), text.begin() + pos, '\n'));
    size_t start = pos + 2;
    std::string close = "}}";
    if (start < text.size() &&
        std::string("#^/!&{>=").find(text[start]) != std::string::npos) {
      tag.kind = text[start];
      ++start;
      if (tag.kind == '{')
        close = "}}}";
    }
    size_t end = text.find(close, start);
    if (end == std::string::npos)
      throw UserError(name + ":" + std::to_string(tag.line) +
                      ": unterminated tag '{{'");
    tag.name = trim(text.substr(start, end - start));
    pos = end + close.size();
    tags.push_back(std::move(tag));
  }
  return tags;
}

/// Looks \p name up through the context stack, innermost first.
const TemplateData* lookup(const std::vector<const TemplateData*>& stack,
                           const std::string& name) {
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if ((*it)->is_object())
      if (const TemplateData* d = (*it)->get(name))
        return d;
  return nullptr;
}

/// Checks tags[i..] up to the closing tag of the current section against
/// \p stack; returns the index after the closing tag (or the end).
size_t checkTags(const std::vector<Tag>& tags, size_t i,
                 std::vector<const TemplateData*>& stack,
                 const std::string& name, const std::string& section) {
  auto fail = [&](const Tag& t, const std::string& what) {
    throw UserError(name + ":" + std::to_string(t.line) + ": " + what);
  };
  while (i < tags.size()) {
    const Tag& t = tags[i];
    switch (t.kind) {
    case '!':
      ++i;
      break;
    case '>':
    case '=':
      fail(t, std::string("'{{") + t.kind +
                  "' (partials, delimiter changes) is not supported");
      break;
    case '/':
      if (t.name != section)
        fail(t, section.empty()
                    ? "'{{/" + t.name + "}}' closes no open section"
                    : "'{{/" + t.name + "}}' closes section '" + section + "'");
      return i + 1;
    case '#':
    case '^': {
      const TemplateData* d = lookup(stack, t.name);
      if (!d)
        fail(t, "unknown section '" + t.name + "'");
      // Check the body against the first list element (list items share
      // their keys), or against the current stack for flags and objects.
      size_t bodyEnd = 0;
      if (t.kind == '#' && d->is_list() && !d->list_value().empty()) {
        stack.push_back(&d->list_value().front());
        bodyEnd = checkTags(tags, i + 1, stack, name, t.name);
        stack.pop_back();
      } else if (t.kind == '#' && d->is_list()) {
        // An empty list: its body's item keys cannot be checked; skip it.
        int depth = 0;
        size_t j = i + 1;
        for (; j < tags.size(); ++j) {
          if (tags[j].kind == '#' || tags[j].kind == '^')
            ++depth;
          else if (tags[j].kind == '/' && depth-- == 0)
            break;
        }
        if (j == tags.size() || tags[j].name != t.name)
          fail(t, "section '" + t.name + "' is never closed");
        bodyEnd = j + 1;
      } else {
        if (d->is_object())
          stack.push_back(d);
        bodyEnd = checkTags(tags, i + 1, stack, name, t.name);
        if (d->is_object())
          stack.pop_back();
      }
      i = bodyEnd;
      break;
    }
    default: {
      const TemplateData* d = lookup(stack, t.name);
      if (!d)
        fail(t, "unknown variable '" + t.name + "'");
      if (!d->is_string())
        fail(t, "'" + t.name + "' is a section, not a variable");
      ++i;
      break;
    }
    }
  }
  if (!section.empty())
    throw UserError(name + ": section '" + section + "' is never closed");
  return i;
}

/// Removes the indentation and the line break around tags that stand alone
/// on their line (sections and comments), so that they produce no output
/// line whether or not the section renders.
std::string trimStandaloneLines(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    size_t next = eol == std::string::npos ? text.size() : eol + 1;
    std::string line = text.substr(pos, next - pos);
    std::string body =
        trim(line.substr(0, line.size() - (eol == std::string::npos ? 0 : 1)));
    bool standalone = body.size() >= 5 && body.compare(0, 2, "{{") == 0 &&
                      std::string("#^/!").find(body[2]) != std::string::npos &&
                      body.compare(body.size() - 2, 2, "}}") == 0 &&
                      body.find("{{", 2) == std::string::npos;
    out += standalone ? body : line;
    pos = next;
  }
  return out;
}

} // namespace

TemplateData makeList(std::vector<TemplateData> items) {
  TemplateData list{TemplateData::type::list};
  for (TemplateData& item : items)
    list.push_back(item);
  return list;
}

std::string renderTemplateText(const std::string& text,
                               const TemplateData& context,
                               const std::string& name) {
  std::vector<const TemplateData*> stack = {&context};
  checkTags(scanTags(text, name), 0, stack, name, "");
  // kainjow applies its own standalone-line rules to rendered lines (and
  // drops blank lines next to sections); hide the line breaks from it so
  // that the output has exactly the template's lines.
  std::string body = trimStandaloneLines(text);
  if (body.find(LineBreak) != std::string::npos)
    throw UserError(name + ": the template contains a control character "
                           "U+0001");
  std::replace(body.begin(), body.end(), '\n', LineBreak);
  kainjow::mustache::mustache tmpl{body};
  if (!tmpl.is_valid())
    throw UserError(name + ": " + tmpl.error_message());
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  std::string out = tmpl.render(context);
  if (!tmpl.is_valid())
    throw UserError(name + ": " + tmpl.error_message());
  // Values never hold control characters (they are sanitized or escaped),
  // so every LineBreak comes from the template.
  std::replace(out.begin(), out.end(), LineBreak, '\n');
  return out;
}

std::string renderTemplateFile(const std::string& dir,
                               const std::string& fileName,
                               const TemplateData& context) {
  std::string path = dir + "/" + fileName;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw UserError("cannot read template '" + path +
                    "' (use --template-dir DIR to choose the template "
                    "directory)");
  std::ostringstream text;
  text << in.rdbuf();
  return renderTemplateText(text.str(), context, path);
}

} // namespace hpvm::fe
