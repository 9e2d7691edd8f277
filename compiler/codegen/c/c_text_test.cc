#include "compiler/codegen/c/c_text.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/ir/error.h"

namespace ingot::codegen {
namespace {

// Nothing in the result can end the comment, splice a line or start a trigraph.
void expect_comment_safe(const std::string& text) {
  const std::string s = c_comment_text(text);
  EXPECT_EQ(s.find("*/"), std::string::npos) << s;
  EXPECT_EQ(s.find('*'), std::string::npos) << s;
  EXPECT_EQ(s.find('\\'), std::string::npos) << s;
  EXPECT_EQ(s.find('?'), std::string::npos) << s;
  for (unsigned char c : s) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << s;
}

TEST(CTextTest, CommentTextKeepsOrdinaryNamesAndEscapesTheRest) {
  EXPECT_EQ(c_comment_text("/layer1/conv/Conv_0 + Relu"), "/layer1/conv/Conv_0 + Relu");
  EXPECT_EQ(c_comment_text("a */ b"), "a %2A/ b");
  EXPECT_EQ(c_comment_text("x\n#include \"y\""), "x%0A#include \"y\"");
  EXPECT_EQ(c_comment_text("?\?/"), "%3F%3F/");
  EXPECT_EQ(c_comment_text("50%"), "50%25");
  EXPECT_EQ(c_comment_text(std::string("\0\xff", 2)), "%00%FF");
  expect_comment_safe("*/\n#define expf(x) 42\n/*");
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 24, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    expect_comment_safe(s);
  }
}

TEST(CTextTest, StringLiteralEscapesQuotesBackslashesAndTrigraphs) {
  EXPECT_EQ(c_string_literal("w.bin"), "\"w.bin\"");
  EXPECT_EQ(c_string_literal("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(c_string_literal("?\?/\n1"), "\"\\077\\077/\\0121\"");
}

TEST(CTextTest, IdentifierAndFileStem) {
  EXPECT_EQ(c_identifier("digits-mlp.v2"), "digits_mlp_v2");
  EXPECT_EQ(c_identifier("3d"), "model_3d");
  EXPECT_EQ(c_identifier(""), "model_");
  EXPECT_EQ(c_identifier("\xc3\xa9t\xc3\xa9"), "__t__");
  check_c_file_stem("model-v1.2_b+c");
  for (const char* bad : {"", "a\"b", "a*b", "a/b", "a\\b", "a b", ".hidden", "-x", "a?b", "caf\xc3\xa9"})
    EXPECT_THROW(check_c_file_stem(bad), Error) << bad;
}

}  // namespace
}  // namespace ingot::codegen
