// TemplateRenderer.h - logic-less Mustache rendering of the templates in
// templates/ (kainjow mustache), with strict, exact whitespace rules.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_TEMPLATERENDERER_H
#define TORCH2HPVM_FRONTEND_CODEGEN_TEMPLATERENDERER_H

#include <kainjow/mustache.hpp>

#include <string>

namespace hpvm::fe {

/// A render context: maps, lists, strings and booleans.
using TemplateData = kainjow::mustache::data;

/// Renders template text \p text (named \p name in errors) with \p context.
/// Variables are inserted verbatim: every value is already sanitized or
/// escaped by the C++ that built the context. A line holding only a section
/// tag ({{#x}}, {{^x}}, {{/x}}) or a comment ({{! ...}}) produces no output
/// line. Throws UserError naming the template for a syntax error or a
/// variable the context does not define.
std::string renderTemplateText(const std::string& text,
                               const TemplateData& context,
                               const std::string& name);

/// Reads \p dir/\p fileName and renders it (see renderTemplateText()); a
/// missing or unreadable template is a UserError naming the path.
std::string renderTemplateFile(const std::string& dir,
                               const std::string& fileName,
                               const TemplateData& context);

/// A list value built from \p items.
TemplateData makeList(std::vector<TemplateData> items);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_TEMPLATERENDERER_H
