#include "nabla/coordinator/csv_series.hh"

#include <gtest/gtest.h>

#include <string>

namespace nabla::coordinator {
namespace {

TEST(CsvSeries, TwoColumnsWithHeader) {
  const auto s =
      parse_csv_series("t_ns,latency_ns\n100,5000\n200,6000\r\n\n# note\n300,7000\n", "x");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.t_ns[2], 300);
  EXPECT_EQ(s.latency_ns[1], 6000);
  EXPECT_FALSE(s.has_type_column);
  ASSERT_EQ(s.type_names.size(), 1u);
  EXPECT_EQ(s.type_names[0], "all");
}

TEST(CsvSeries, TypesInOrderOfFirstAppearance) {
  const auto s = parse_csv_series("1,10,/view\n2,20,/bid\n3,30,/view\n", "x");
  ASSERT_EQ(s.type_names, (std::vector<std::string>{"/view", "/bid"}));
  EXPECT_EQ(s.type, (std::vector<std::int32_t>{0, 1, 0}));
  EXPECT_TRUE(s.has_type_column);
}

TEST(CsvSeries, QuotedTypes) {
  const auto s = parse_csv_series("1,10,\"a,b\"\n2,20, \"say \"\"hi\"\"\" \n3,30,plain\n", "x");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.type_names[0], "a,b");
  EXPECT_EQ(s.type_names[1], "say \"hi\"");
  EXPECT_EQ(s.type_names[2], "plain");
}

void expect_error(const std::string& text, std::size_t line, const std::string& fragment) {
  try {
    parse_csv_series(text, "f.csv");
    FAIL() << "no error for: " << text;
  } catch (const CsvError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("f.csv:" + std::to_string(line)), std::string::npos);
  }
}

TEST(CsvSeries, ErrorsNameTheLine) {
  expect_error("t_ns,latency_ns\n1,2\n3,x\n", 3, "latency_ns 'x' is not an integer");
  expect_error("1,2\n3,4,a\n", 2, "expected 2 columns");
  expect_error("time,lat\n1,2\n", 1, "header must be");
  expect_error("1,2,a,b\n", 1, "too many columns");
  expect_error("1,-5\n", 1, "negative");
  expect_error("1\n", 1, "at least 2 columns");
  expect_error("t_ns,latency_ns\n", 1, "no records");
  expect_error("1.5,2\n", 1, "t_ns '1.5' is not an integer");
  expect_error("1,2,\"open\n", 1, "unterminated quoted field");
  expect_error("1,2,\"a\"b\n", 1, "text after a quoted field");
}

}  // namespace
}  // namespace nabla::coordinator
