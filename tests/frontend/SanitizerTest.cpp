// SanitizerTest.cpp - the identifier sanitizer, the text escaper, and that
// hostile model names produce a harmless program.
#include "codegen/Sanitizer.h"
#include "CodegenTestGraphs.h"
#include "codegen/ProgramLayout.h"

#include <doctest/doctest.h>

using namespace hpvm::fe;
using namespace hpvm::fe::testing;

TEST_CASE("Sanitizer: identifiers are C-safe and lowercase") {
  CHECK(sanitizeIdentifier("conv1.weight") == "conv1_weight");
  CHECK(sanitizeIdentifier("onnx::Conv_123") == "onnx_conv_123");
  CHECK(sanitizeIdentifier("123abc") == "n123abc");
  CHECK(sanitizeIdentifier("__init__") == "init");
  CHECK(sanitizeIdentifier("a..b--c") == "a_b_c");
  CHECK(sanitizeIdentifier("") == "unnamed");
  CHECK(sanitizeIdentifier("\xc3\xa9\xc3\xa9") == "unnamed");
  CHECK(sanitizeIdentifier("x\"); system(\"rm -rf ~\");//") ==
        "x_system_rm_rf");
}

TEST_CASE("Sanitizer: long names are cut, with a hash of the whole name") {
  const std::string w(100000, 'w');
  const std::string a = sanitizeIdentifier(w);
  REQUIRE(a.size() == kMaxIdentifierLength);
  CHECK(a.substr(0, 55) == std::string(55, 'w'));
  CHECK(a[55] == '_');
  CHECK(a.find_first_not_of("0123456789abcdef", 56) == std::string::npos);
  CHECK(sanitizeIdentifier(w) == a); // deterministic
  CHECK(sanitizeIdentifier(w + "x") != a);
  // A cut at a separator leaves no "__", and the hash is of the name.
  const std::string b = sanitizeIdentifier(std::string(54, 'b') + "." + w);
  CHECK(b.substr(0, 55) == std::string(54, 'b') + "_");
  CHECK(b.find("__") == std::string::npos);
  CHECK(sanitizeIdentifier(std::string(64, 'c')) == std::string(64, 'c'));
}

TEST_CASE("Sanitizer: keywords and reserved names get a suffix") {
  CHECK(sanitizeIdentifier("int") == "int_v");
  CHECK(sanitizeIdentifier("Class") == "class_v");
  CHECK(sanitizeIdentifier("errno") == "errno_v");
  CHECK(sanitizeIdentifier("size_t") == "size_t_v");
  CHECK(sanitizeIdentifier("hpvm") == "hpvm_v");
  CHECK(sanitizeIdentifier("main") == "main_v");
  CHECK(isReservedWord("a__b"));
  CHECK(isReservedWord("_x"));
  CHECK_FALSE(isReservedWord("weight"));
}

TEST_CASE("Sanitizer: identifier table keeps names and derived names unique") {
  IdentifierTable t({"root", "var_0"});
  CHECK(t.claim("root") == "root_2");
  CHECK(t.claim("var.0") == "var_0_2");
  CHECK(t.claim("w", {"_bytes"}) == "w");
  CHECK(t.claim("W", {"_bytes"}) == "w_2");
  // "w_bytes" is taken by w's pair, so a weight named so moves on.
  CHECK(t.claim("w_bytes", {"_bytes"}) == "w_bytes_2");
  CHECK(t.taken("w_2_bytes"));
  CHECK(t.claim("int", {"_bytes"}) == "int_v");
  CHECK(t.taken("int_v_bytes"));
}

TEST_CASE("Sanitizer: escapeText is safe in strings and comments") {
  CHECK(escapeText("plain text 1.0") == "plain text 1.0");
  CHECK(escapeText("a\"b") == "a\\\"b");
  CHECK(escapeText("back\\slash") == "back\\134slash");
  CHECK(escapeText("line\nnext") == "line\\nnext");
  CHECK(escapeText("tab\there") == "tab\\there");
  CHECK(escapeText("*/ end") == "*\\057 end");
  CHECK(escapeText("/* open") == "\\057* open");
  CHECK(escapeText("what?\?!") == "what\\?\?!");
  CHECK(escapeText("\x01\x7f") == "\\001\\177");
  CHECK(escapeText("caf\xc3\xa9") == "caf\\303\\251");
  // No escape ends in a backslash, so a // comment never continues.
  CHECK(escapeText("end\\").back() != '\\');
}

TEST_CASE("Sanitizer: shell quoting for echoed commands") {
  CHECK(shellQuote("cmake") == "cmake");
  CHECK(shellQuote("-DX=/a/b") == "-DX=/a/b");
  CHECK(shellQuote("a b") == "'a b'");
  CHECK(shellQuote("it's") == "'it'\\''s'");
  CHECK(shellQuote("") == "''");
}

TEST_CASE("Sanitizer: hostile names produce a harmless program") {
  const std::string evil = "x\"); system(\"rm -rf ~\");//";
  TinyNetNames names;
  names.input = evil;
  names.convWeight = evil;
  names.convBias = "*/ system(\"id\"); /*";
  names.fcWeight = "line\nbreak\\";
  names.fcBias = "root";
  names.convNode = evil;
  names.tanhNode = "?\?/\n#include </etc/passwd>";
  names.poolNode = "\\";
  names.gemmNode = "\xff\xfe";
  names.softmaxNode = "var_0_node";
  auto g = makeTinyNet(names);
  ProgramLayout layout = layoutProgram(*g, "tiny.onnx");
  for (Target target : {Target::HpvmTensor, Target::Tensor}) {
    CodegenOptions opts = testCodegenOptions(target);
    opts.modelName = evil;
    opts.modelFile = evil + "'\n rm -rf /.onnx";
    std::string src = renderProgram(layout, opts);
    // The hostile text only ever appears escaped.
    CHECK(src.find("x\"); system") == std::string::npos);
    CHECK(src.find("*/ system") == std::string::npos);
    CHECK(src.find("\n#include </etc") == std::string::npos);
    CHECK(src.find("\n rm -rf") == std::string::npos);
    // No line outside a comment or a string mentions system(.
    std::istringstream lines(src);
    std::string line;
    while (std::getline(lines, line)) {
      size_t call = line.find("system(");
      if (call == std::string::npos)
        continue;
      size_t comment = line.find("//");
      size_t quote = line.find('"');
      bool inComment = comment != std::string::npos && comment < call;
      bool inString = quote != std::string::npos && quote < call;
      CHECK_MESSAGE((inComment || inString), line);
    }
    CHECK(syntaxCheck(src, std::string("evil-") + targetName(target)) == "");
  }
}
