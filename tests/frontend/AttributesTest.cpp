// AttributesTest.cpp - the typed attribute reader and its consumption
// tracking.
#include "onnx/Attributes.h"

#include <doctest/doctest.h>

using namespace hpvm::fe;

TEST_CASE("Attributes: typed reads return values or defaults") {
  std::map<std::string, AttrValue> attrs = {
      {"group", int64_t{4}},
      {"epsilon", 0.5},
      {"mode", std::string("constant")},
      {"pads", std::vector<int64_t>{1, 2, 3, 4}},
      {"scales", std::vector<double>{0.5, 2.0}},
  };
  AttrReader r(attrs);
  CHECK(r.getInt("group", 1) == 4);
  CHECK(r.getInt("missing", 7) == 7);
  CHECK(r.getFloat("epsilon", 1e-5) == 0.5);
  CHECK(r.getFloat("group", 0.0) == 4.0); // integers read as floats
  CHECK(r.getString("mode", "reflect") == "constant");
  CHECK(r.getInts("pads", {}) == std::vector<int64_t>{1, 2, 3, 4});
  CHECK(r.getFloats("scales", {}) == std::vector<double>{0.5, 2.0});
  CHECK(!r.getTensor("value"));
}

TEST_CASE("Attributes: a value of the wrong type names the attribute") {
  std::map<std::string, AttrValue> attrs = {{"group", std::string("two")},
                                            {"pads", int64_t{1}}};
  AttrReader r(attrs);
  CHECK_THROWS_WITH_AS(r.getInt("group", 1),
                       "attribute 'group' must be an integer, not a string",
                       AttrError);
  CHECK_THROWS_WITH_AS(r.getInts("pads", {}),
                       "attribute 'pads' must be a list of integers, not an "
                       "integer",
                       AttrError);
}

TEST_CASE("Attributes: unread attributes are reported unless ignored") {
  std::map<std::string, AttrValue> attrs = {{"axis", int64_t{1}},
                                            {"momentum", 0.9},
                                            {"spatial", int64_t{1}},
                                            {"alpha", 0.2}};
  AttrReader r(attrs);
  r.getInt("axis", 0);
  CHECK(r.unconsumed("momentum spatial") == std::vector<std::string>{"alpha"});
  r.consume("alpha");
  CHECK(r.unconsumed("momentum spatial").empty());
  CHECK(r.unconsumed("") == std::vector<std::string>{"momentum", "spatial"});
}

TEST_CASE("Attributes: integer lists print as in messages") {
  CHECK(formatInts({}) == "[]");
  CHECK(formatInts({2, 2}) == "[2, 2]");
  CHECK(formatInts({-1}) == "[-1]");
}
