// Error messages echo names and headers read from the user's files; what reaches the terminal
// must be valid UTF-8 without control bytes.
#include <gtest/gtest.h>

#include <string>

#include <braze/error.h>

namespace braze {
namespace {

TEST(Printable, KeepsTextAndValidUtf8) {
  EXPECT_EQ(printable("input 'x' is float32[2,3]\n\tsee above"),
            "input 'x' is float32[2,3]\n\tsee above");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x88\x9a \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x88\x9a \xf0\x9f\x98\x80");
}

TEST(Printable, EscapesControlAndInvalidBytes) {
  EXPECT_EQ(printable(std::string("'<f4\xf9, '")), "'<f4\\xf9, '");
  EXPECT_EQ(printable(std::string("a\x01"
                                  "b\x7f",
                                  4)),
            "a\\x01b\\x7f");
  EXPECT_EQ(printable(std::string("\0", 1)), "\\x00");
  EXPECT_EQ(printable("\xc3"), "\\xc3") << "a sequence cut short";
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf") << "overlong";
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "a surrogate";
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "past U+10FFFF";
  EXPECT_EQ(printable("\xe2\x28\xa1"), "\\xe2(\\xa1") << "a bad continuation byte";
}

}  // namespace
}  // namespace braze
