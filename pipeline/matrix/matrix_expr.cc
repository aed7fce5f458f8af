// Selection expressions (matrix.h, Expr): -k over test IDs, -m over markers.
// Grammar (recursive descent; precedence not > and > or):
//   expr    := and ('or' and)*
//   and     := unary ('and' unary)*
//   unary   := 'not' unary | primary
//   primary := '(' expr ')' | WORD
// Tokens are separated by whitespace; '(' and ')' are tokens of their own; a
// WORD is any other run of non-space characters. The keywords are lowercase
// and case-sensitive. -k words match case-insensitive substrings of the ID;
// -m words match marker names exactly. Syntax errors are PipelineError
// "<flag> '<text>': col N: message" with N the 1-based column of the
// offending token (one past the end at the end of the text).
#include <algorithm>
#include <cctype>

#include "pipeline/matrix/matrix.h"

namespace torq::pipeline::matrix {

struct Expr::Node {
  enum class Kind { kWord, kNot, kAnd, kOr };
  Kind kind = Kind::kWord;
  std::string word;  // kWord, as written
  std::shared_ptr<const Node> a, b;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

struct Token {
  std::string text;
  size_t col = 0;  // 1-based
};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '(' || c == ')') {
      out.push_back({std::string(1, c), i + 1});
      ++i;
    } else {
      const size_t start = i;
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i])) && s[i] != '(' && s[i] != ')') ++i;
      out.push_back({s.substr(start, i - start), start + 1});
    }
  }
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_keyword(const std::string& t) { return t == "and" || t == "or" || t == "not"; }

class Parser {
 public:
  Parser(const std::string& text, const std::string& flag) : text_(text), flag_(flag), tokens_(tokenize(text)) {}

  NodePtr parse() {
    if (tokens_.empty()) return nullptr;
    // Parsing, evaluating and freeing recurse once per level of the tree:
    // bounded (issue 30) by the words in all and the nesting of '(' and 'not'.
    if (tokens_.size() > kMaxTokens)
      fail(tokens_[kMaxTokens].col, "more than " + std::to_string(kMaxTokens) + " words and parentheses");
    NodePtr root = parse_or();
    if (pos_ < tokens_.size()) {
      const Token& t = tokens_[pos_];
      if (t.text == ")") fail(t.col, "unmatched ')'");
      fail(t.col, "expected 'and' or 'or' before '" + t.text + "'");
    }
    return root;
  }

 private:
  static constexpr size_t kMaxTokens = 1000;
  static constexpr int kMaxNesting = 64;

  [[noreturn]] void fail(size_t col, const std::string& msg) const {
    const std::string shown = text_.size() > 80 ? text_.substr(0, 77) + "..." : text_;
    throw PipelineError(flag_ + " '" + shown + "': col " + std::to_string(col) + ": " + msg);
  }

  // One more level of '(' or 'not' for as long as it lives.
  struct Level {
    explicit Level(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxNesting)
        p_.fail(p_.here(), "nested deeper than " + std::to_string(kMaxNesting) + " levels of '(' and 'not'");
    }
    ~Level() { --p_.nesting_; }
    Parser& p_;
  };

  bool accept(const char* keyword) {
    if (pos_ < tokens_.size() && tokens_[pos_].text == keyword) {
      ++pos_;
      return true;
    }
    return false;
  }

  size_t here() const { return pos_ < tokens_.size() ? tokens_[pos_].col : text_.size() + 1; }

  static NodePtr make(Kind kind, NodePtr a, NodePtr b = nullptr) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = kind;
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
  }

  NodePtr parse_or() {
    NodePtr left = parse_and();
    while (accept("or")) left = make(Kind::kOr, left, parse_and());
    return left;
  }

  NodePtr parse_and() {
    NodePtr left = parse_unary();
    while (accept("and")) left = make(Kind::kAnd, left, parse_unary());
    return left;
  }

  NodePtr parse_unary() {
    if (accept("not")) {
      const Level level(*this);
      return make(Kind::kNot, parse_unary());
    }
    return parse_primary();
  }

  NodePtr parse_primary() {
    if (pos_ >= tokens_.size() || tokens_[pos_].text == ")" || is_keyword(tokens_[pos_].text)) {
      std::string msg = "expected a word or '('";
      if (pos_ > 0) msg += " after '" + tokens_[pos_ - 1].text + "'";
      if (pos_ < tokens_.size()) msg += ", got '" + tokens_[pos_].text + "'";
      fail(here(), msg);
    }
    const Token& t = tokens_[pos_++];
    if (t.text == "(") {
      const Level level(*this);
      NodePtr inner = parse_or();
      if (!accept(")"))
        fail(here(), "expected ')' to close '(' at col " + std::to_string(t.col) +
                         (pos_ < tokens_.size() ? ", got '" + tokens_[pos_].text + "'" : ""));
      return inner;
    }
    auto n = std::make_shared<Expr::Node>();
    n->word = t.text;
    return n;
  }

  const std::string& text_;
  const std::string& flag_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;  // levels of ( and not open
};

template <class WordTrue>
bool eval(const Expr::Node* n, const WordTrue& word_true) {
  if (n == nullptr) return true;
  switch (n->kind) {
    case Kind::kWord: return word_true(n->word);
    case Kind::kNot: return !eval(n->a.get(), word_true);
    case Kind::kAnd: return eval(n->a.get(), word_true) && eval(n->b.get(), word_true);
    case Kind::kOr: return eval(n->a.get(), word_true) || eval(n->b.get(), word_true);
  }
  return false;
}

}  // namespace

Expr Expr::parse(const std::string& text, const std::string& flag) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text, flag).parse();
  return e;
}

bool Expr::match_id(const std::string& id) const {
  const std::string lid = lower(id);
  return eval(root_.get(), [&lid](const std::string& w) { return lid.find(lower(w)) != std::string::npos; });
}

bool Expr::match_markers(const std::vector<std::string>& markers) const {
  return eval(root_.get(), [&markers](const std::string& w) {
    return std::find(markers.begin(), markers.end(), w) != markers.end();
  });
}

}  // namespace torq::pipeline::matrix
