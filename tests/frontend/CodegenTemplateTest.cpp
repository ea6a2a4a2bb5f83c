// CodegenTemplateTest.cpp - the Mustache renderer: standalone lines, strict
// variables, template errors.
#include "codegen/TemplateRenderer.h"
#include "support/Diagnostics.h"

#include <doctest/doctest.h>

using namespace hpvm::fe;

namespace {

TemplateData sampleContext() {
  TemplateData ctx;
  ctx.set("name", "a<b>&\"c\"");
  ctx.set("yes", TemplateData{TemplateData::type::bool_true});
  ctx.set("no", TemplateData{TemplateData::type::bool_false});
  TemplateData one, two;
  one.set("v", "1");
  two.set("v", "2");
  ctx.set("items", makeList({one, two}));
  ctx.set("none", makeList({}));
  return ctx;
}

} // namespace

TEST_CASE("Codegen: templates insert values verbatim") {
  CHECK(renderTemplateText("x {{name}} y\n", sampleContext(), "t") ==
        "x a<b>&\"c\" y\n");
}

TEST_CASE("Codegen: standalone section lines produce no output line") {
  const std::string text = "begin\n"
                           "{{#items}}\n"
                           "  item {{v}}\n"
                           "{{/items}}\n"
                           "{{#none}}\n"
                           "  never\n"
                           "{{/none}}\n"
                           "{{^no}}\n"
                           "  not no\n"
                           "{{/no}}\n"
                           "{{#no}}\n"
                           "  hidden\n"
                           "{{/no}}\n"
                           "  {{! a comment }}\n"
                           "end\n";
  CHECK(renderTemplateText(text, sampleContext(), "t") ==
        "begin\n  item 1\n  item 2\n  not no\nend\n");
}

TEST_CASE("Codegen: blank lines next to sections are kept") {
  const std::string text = "a\n"
                           "{{#items}}\n"
                           "\n"
                           "  {{v}}\n"
                           "{{/items}}\n"
                           "\n"
                           "{{#yes}}\n"
                           "\n"
                           "{{/yes}}\n"
                           "b\n";
  CHECK(renderTemplateText(text, sampleContext(), "t") ==
        "a\n\n  1\n\n  2\n\n\nb\n");
}

TEST_CASE("Codegen: unknown template variables are errors") {
  CHECK_THROWS_WITH_AS(
      renderTemplateText("a\n{{nmae}}\n", sampleContext(), "my.in"),
      "my.in:2: unknown variable 'nmae'", UserError);
  CHECK_THROWS_WITH_AS(
      renderTemplateText("{{#items}}{{w}}{{/items}}", sampleContext(), "t"),
      "t:1: unknown variable 'w'", UserError);
  CHECK_THROWS_WITH_AS(
      renderTemplateText("{{#nothing}}{{/nothing}}", sampleContext(), "t"),
      "t:1: unknown section 'nothing'", UserError);
  CHECK_THROWS_WITH_AS(renderTemplateText("{{items}}", sampleContext(), "t"),
                       "t:1: 'items' is a section, not a variable", UserError);
}

TEST_CASE("Codegen: malformed templates are errors") {
  CHECK_THROWS_WITH_AS(
      renderTemplateText("{{#items}}\n{{v}}\n", sampleContext(), "t"),
      "t: section 'items' is never closed", UserError);
  CHECK_THROWS_WITH_AS(
      renderTemplateText("{{#yes}}{{/no}}", sampleContext(), "t"),
      "t:1: '{{/no}}' closes section 'yes'", UserError);
  CHECK_THROWS_WITH_AS(renderTemplateText("{{> part}}", sampleContext(), "t"),
                       "t:1: '{{>' (partials, delimiter changes) is not "
                       "supported",
                       UserError);
  CHECK_THROWS_WITH_AS(renderTemplateText("x {{name", sampleContext(), "t"),
                       "t:1: unterminated tag '{{'", UserError);
}

TEST_CASE("Codegen: a missing template file names the path") {
  CHECK_THROWS_WITH_AS(
      renderTemplateFile("/nonexistent", "x.in", sampleContext()),
      "cannot read template '/nonexistent/x.in' (use --template-dir DIR to "
      "choose the template directory)",
      UserError);
}
