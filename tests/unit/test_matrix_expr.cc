// Selection expressions (pipeline/matrix/matrix.h, Expr): -k over ID substrings,
// -m over marker names, precedence not > and > or, parentheses, and syntax
// errors with their 1-based column.
#include <gtest/gtest.h>

#include "pipeline/matrix/matrix.h"
#include "tests/unit/matrix_fixture.h"

namespace torq::pipeline::matrix {
namespace {

using matrix_test::error_of;

bool k(const std::string& expr, const std::string& id) { return Expr::parse(expr, "-k").match_id(id); }
bool m(const std::string& expr, const std::vector<std::string>& markers) {
  return Expr::parse(expr, "-m").match_markers(markers);
}

TEST(MatrixExpr, EmptyExpressionMatchesEverything) {
  EXPECT_TRUE(k("", "resnet-fp32-sim-discover"));
  EXPECT_TRUE(k("   ", "x"));
  EXPECT_TRUE(m("", {}));
  EXPECT_TRUE(Expr().match_id("x"));
  EXPECT_EQ(Expr::parse(" a or b ", "-k").text(), " a or b ");
}

TEST(MatrixExpr, KeywordsMatchCaseInsensitiveSubstringsOfTheId) {
  EXPECT_TRUE(k("resnet", "resnet-fp32-sim-discover"));
  EXPECT_TRUE(k("ResNet", "resnet-fp32-sim-discover"));
  EXPECT_TRUE(k("FP32-SIM", "resnet-fp32-sim-discover"));
  EXPECT_TRUE(k("resnet", "ResNet18-fp32-sim-discover"));
  EXPECT_FALSE(k("bf16", "resnet-fp32-sim-discover"));
  EXPECT_FALSE(k("resnet-fp32-sim-discover-x", "resnet-fp32-sim-discover"));
}

TEST(MatrixExpr, MarkersMatchExactNames) {
  EXPECT_TRUE(m("push", {"nightly", "push"}));
  EXPECT_FALSE(m("pus", {"push"}));
  EXPECT_FALSE(m("Push", {"push"}));
  EXPECT_TRUE(m("not slow", {"push"}));
  EXPECT_FALSE(m("not slow", {"slow"}));
  EXPECT_FALSE(m("push", {}));
}

TEST(MatrixExpr, AndBindsTighterThanOr) {
  // a or (b and c): true for "a" alone; (a or b) and c would be false.
  EXPECT_TRUE(k("a or b and c", "a"));
  EXPECT_FALSE(k("a or b and c", "b"));
  EXPECT_TRUE(k("a or b and c", "bc"));
  // (b and c) or a, the same grouping written the other way round.
  EXPECT_TRUE(k("b and c or a", "a"));
}

TEST(MatrixExpr, NotBindsTighterThanAnd) {
  // (not a) and b: false for "ab" and for "a"; not (a and b) would be true for "a".
  EXPECT_FALSE(k("not a and b", "a"));
  EXPECT_TRUE(k("not a and b", "b"));
  EXPECT_FALSE(k("not a and b", "ab"));
  EXPECT_TRUE(k("not not a", "a"));
  EXPECT_FALSE(k("not not a", "b"));
}

TEST(MatrixExpr, ParenthesesGroup) {
  EXPECT_FALSE(k("(a or b) and c", "a"));
  EXPECT_TRUE(k("(a or b) and c", "bc"));
  EXPECT_TRUE(k("not (a and b)", "a"));
  EXPECT_FALSE(k("not (a and b)", "ab"));
  EXPECT_TRUE(k("((resnet))and(bf16)", "resnet-bf16-sim-run"));
  EXPECT_TRUE(m("(push or nightly) and not slow", {"nightly"}));
  EXPECT_FALSE(m("(push or nightly) and not slow", {"nightly", "slow"}));
}

TEST(MatrixExpr, KeywordsAreLowercaseOnly) {
  // "AND" is a word, so two words in a row.
  EXPECT_EQ(error_of([] { Expr::parse("a AND b", "-k"); }), "-k 'a AND b': col 3: expected 'and' or 'or' before 'AND'");
  EXPECT_TRUE(k("Not", "cannot"));
}

TEST(MatrixExpr, SyntaxErrorsGiveTheColumn) {
  EXPECT_EQ(error_of([] { Expr::parse("a and", "-k"); }), "-k 'a and': col 6: expected a word or '(' after 'and'");
  EXPECT_EQ(error_of([] { Expr::parse("and a", "-k"); }), "-k 'and a': col 1: expected a word or '(', got 'and'");
  EXPECT_EQ(error_of([] { Expr::parse("a or or b", "-m"); }),
            "-m 'a or or b': col 6: expected a word or '(' after 'or', got 'or'");
  EXPECT_EQ(error_of([] { Expr::parse("not", "-m"); }), "-m 'not': col 4: expected a word or '(' after 'not'");
  EXPECT_EQ(error_of([] { Expr::parse("(a or b", "-k"); }), "-k '(a or b': col 8: expected ')' to close '(' at col 1");
  EXPECT_EQ(error_of([] { Expr::parse("x and (a b)", "-k"); }),
            "-k 'x and (a b)': col 10: expected ')' to close '(' at col 7, got 'b'");
  EXPECT_EQ(error_of([] { Expr::parse("()", "-k"); }), "-k '()': col 2: expected a word or '(' after '(', got ')'");
  EXPECT_EQ(error_of([] { Expr::parse("a)", "-k"); }), "-k 'a)': col 2: unmatched ')'");
  EXPECT_EQ(error_of([] { Expr::parse("a  b", "-k"); }), "-k 'a  b': col 4: expected 'and' or 'or' before 'b'");
}

}  // namespace
}  // namespace torq::pipeline::matrix
