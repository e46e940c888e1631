// The operating-point shift folds each gradient row's phase shift per type:
// the largest by magnitude (signed), whose phase it was, the mean, and the
// share of the training mean.
#include "nabla/campaign/operating_point.hh"

#include <gtest/gtest.h>

#include <limits>

namespace nabla::campaign {
namespace {

TEST(OperatingPointShift, LargestByMagnitudeMeanAndShareOfTheTrainingMean) {
  const std::vector<PhaseShift> rows{{"a -> b:1", "/view", 1e6},
                                     {"a -> b:1", "/auth", 1e5},
                                     {"b -> c:2", "/view", 3e6},
                                     {"b -> c:2", "/auth", -4e5}};
  const auto s = operating_point_shifts(rows, {"/auth", "/view"}, {1e6, 2e6});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].type, "/view");  // the order of the rows
  EXPECT_DOUBLE_EQ(s[0].largest_ns, 3e6);
  EXPECT_EQ(s[0].largest_link, "b -> c:2");
  EXPECT_DOUBLE_EQ(s[0].mean_ns, 2e6);
  EXPECT_EQ(s[0].phases, 2u);
  ASSERT_TRUE(s[0].relative());
  EXPECT_DOUBLE_EQ(*s[0].relative(), 1.5);
  EXPECT_EQ(s[1].type, "/auth");
  EXPECT_DOUBLE_EQ(s[1].largest_ns, -4e5);  // a fall is a shift too
  EXPECT_EQ(s[1].largest_link, "b -> c:2");
  EXPECT_DOUBLE_EQ(s[1].mean_ns, -1.5e5);
  EXPECT_EQ(describe_shift(s[0]),
            "/view +3 ms (+150% of 2 ms) in b -> c:2's phase, mean +2 ms over 2 phases");
  EXPECT_EQ(describe_shift(s[1]),
            "/auth -400 us (-40% of 1 ms) in b -> c:2's phase, mean -150 us over 2 phases");
}

TEST(OperatingPointShift, WithoutATrainingMeanOnlyTheAbsoluteShift) {
  const auto s = operating_point_shifts({{"a -> b:1", "/x", 2.5e5}}, {}, {});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].training_mean_ns);
  EXPECT_FALSE(s[0].relative());
  EXPECT_EQ(describe_shift(s[0]), "/x +250 us in a -> b:1's phase");
}

TEST(OperatingPointShift, NonFiniteShiftsAreSkippedAndNoRowsGiveNothing) {
  EXPECT_TRUE(operating_point_shifts({}, {"/x"}, {1e6}).empty());
  const auto s = operating_point_shifts(
      {{"a -> b:1", "/x", std::numeric_limits<double>::quiet_NaN()}, {"c -> d:2", "/x", 1e3}},
      {"/x"}, {1e6});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].phases, 1u);
  EXPECT_EQ(s[0].largest_link, "c -> d:2");
}

}  // namespace
}  // namespace nabla::campaign
