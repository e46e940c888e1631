// PHC-to-monotonic mapping against synthetic clocks of known offset and rate
// (this machine has no PTP hardware clock), and PhcClock's error on a
// missing /dev/ptpN.
#include "nabla/loadgen/phc_clock.hh"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace nabla::loadgen {
namespace {

// A NIC clock 37 s ahead of a monotonic clock near 1.7e18 ns (TAI-like
// magnitudes, where doubles lose 256 ns) and running `ppm` fast.
struct SyntheticPhc {
  int64_t t0 = 5'000'000'000;              // monotonic at the start
  int64_t p0 = 1'700'000'037'000'000'000;  // PHC at t0
  double ppm = 50.0;
  int64_t phc_at(int64_t monotonic) const {
    return p0 + static_cast<int64_t>(
                    std::llround(static_cast<double>(monotonic - t0) * (1.0 + ppm * 1e-6)));
  }
  // A pair read at monotonic t: the PHC was read somewhere inside a window
  // of `window` ns starting at t.
  ClockPair pair(int64_t t, int64_t window, int64_t read_at) const {
    return {t, phc_at(t + read_at), t + window};
  }
};

TEST(PhcMapping, FollowsOffsetAndRateWithinAFewHundredNanoseconds) {
  SyntheticPhc clock;
  PhcMapping m;
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int64_t> window(200, 2000);
  int64_t t = clock.t0;
  for (int i = 0; i < 16; ++i) {
    const int64_t w = window(rng);
    m.add(clock.pair(t, w, std::uniform_int_distribution<int64_t>(0, w)(rng)));
    t += PhcMapping::kRefreshNs;
  }
  EXPECT_NEAR(m.rate(), 1.0 / (1.0 + 50e-6), 1e-7);
  // Inside the fitted range and 100 ms beyond the newest pair (the next
  // refresh): an offset-only map would be 5 us off there at 50 ppm.
  for (int64_t at : {clock.t0 + 300'000'000, t - 50'000'000, t + 100'000'000}) {
    EXPECT_NEAR(static_cast<double>(m.to_monotonic(clock.phc_at(at))), static_cast<double>(at),
                500.0)
        << "at " << at;
  }
}

TEST(PhcMapping, OnePairGivesTheOffsetAtSlopeOne) {
  SyntheticPhc clock;
  clock.ppm = 0;
  PhcMapping m;
  EXPECT_FALSE(m.ready());
  EXPECT_THROW(m.to_monotonic(1), std::logic_error);
  m.add(clock.pair(clock.t0, 1000, 500));  // read exactly mid-window
  ASSERT_TRUE(m.ready());
  EXPECT_EQ(m.rate(), 1.0);
  EXPECT_EQ(m.to_monotonic(clock.phc_at(clock.t0 + 500)), clock.t0 + 500);
  EXPECT_EQ(m.to_monotonic(clock.phc_at(clock.t0 + 2'000'500)), clock.t0 + 2'000'500);
  // Pairs closer than kMinSpanNs keep slope 1 (no rate from 1 ms of data).
  clock.ppm = 1000;
  PhcMapping near;
  near.add(clock.pair(clock.t0, 100, 50));
  near.add(clock.pair(clock.t0 + 1'000'000, 100, 50));
  EXPECT_EQ(near.rate(), 1.0);
}

TEST(PhcMapping, NarrowPairsOutweighWideOnesAndBackwardPairsAreIgnored) {
  SyntheticPhc clock;
  clock.ppm = 0;
  PhcMapping m;
  // A wide pair whose PHC read sits at the window's very end: its midpoint
  // is 50 us off. Narrow pairs around it pull the fit back.
  m.add(clock.pair(clock.t0, 200, 100));
  m.add(clock.pair(clock.t0 + 100'000'000, 100'000, 100'000));
  m.add(clock.pair(clock.t0 + 200'000'000, 200, 100));
  EXPECT_NEAR(static_cast<double>(m.to_monotonic(clock.phc_at(clock.t0 + 150'000'000))),
              static_cast<double>(clock.t0 + 150'000'000), 100.0);
  const int64_t before = m.to_monotonic(clock.phc_at(clock.t0));
  m.add({clock.t0 + 10, clock.phc_at(clock.t0), clock.t0});  // after < before
  EXPECT_EQ(m.to_monotonic(clock.phc_at(clock.t0)), before);
}

TEST(PhcClock, AMissingClockIsAnErrorNamingItsDevice) {
  try {
    PhcClock clock(987);
    ADD_FAILURE() << "opened /dev/ptp987";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/ptp987"), std::string::npos) << e.what();
  }
  EXPECT_THROW(PhcClock(-1), std::invalid_argument);
}

}  // namespace
}  // namespace nabla::loadgen
