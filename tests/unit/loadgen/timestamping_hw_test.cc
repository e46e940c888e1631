// The hardware-timestamp decision on recorded driver answers
// (ETHTOOL_GET_TS_INFO as `ethtool -T` prints it), and the plan on loopback.
// This VM has no NIC with hardware stamps: the capable case is a recorded
// answer, never a pretended device.
#include <gtest/gtest.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>

#include "nabla/loadgen/timestamping.hh"

namespace nabla::loadgen {
namespace {

// Mellanox ConnectX-5 (mlx5_core): hardware-transmit, software-transmit,
// hardware-receive, software-receive, software-system-clock,
// hardware-raw-clock; PTP clock 0; TX off/on; RX filters none/all.
DriverTimestampInfo connectx5() {
  DriverTimestampInfo i;
  i.so_timestamping = SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_TX_SOFTWARE |
                      SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RX_SOFTWARE |
                      SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
  EXPECT_EQ(i.so_timestamping, 0x5fu);
  i.phc_index = 0;
  i.tx_types = (1u << HWTSTAMP_TX_OFF) | (1u << HWTSTAMP_TX_ON);
  i.rx_filters = (1u << HWTSTAMP_FILTER_NONE) | (1u << HWTSTAMP_FILTER_ALL);
  return i;
}

// veth (and lo): software-transmit, software-receive, software-system-clock;
// no PTP clock, no hardware TX types or RX filters.
DriverTimestampInfo veth() {
  DriverTimestampInfo i;
  i.so_timestamping =
      SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  EXPECT_EQ(i.so_timestamping, 0x1au);
  return i;
}

TEST(HardwareTimestamps, CapableNicIsAccepted) {
  auto a = assess_hardware(connectx5(), "enp1s0f0");
  EXPECT_TRUE(a.available);
  EXPECT_TRUE(a.reason.empty());
  EXPECT_EQ(a.phc_index, 0);  // the clock the engine maps from
}

// SCM_TIMESTAMPING as the kernel fills it: ts[0] software (CLOCK_REALTIME),
// ts[1] unused, ts[2] raw hardware (PHC time); a zero stamp is absent.
TEST(HardwareTimestamps, ControlMessageYieldsSoftwareAndRawHardwareStamps) {
  scm_timestamping both{};
  both.ts[0] = {1'763'800'000, 123'456'789};
  both.ts[2] = {1'763'800'037, 5};
  KernelStamps k = parse_scm_timestamping(&both, sizeof both);
  ASSERT_TRUE(k.software_ns && k.hardware_ns);
  EXPECT_EQ(*k.software_ns, 1'763'800'000'123'456'789);
  EXPECT_EQ(*k.hardware_ns, 1'763'800'037'000'000'005);
  scm_timestamping software_only{};
  software_only.ts[0] = {1, 2};
  k = parse_scm_timestamping(&software_only, sizeof software_only);
  EXPECT_EQ(k.software_ns, 1'000'000'002);
  EXPECT_FALSE(k.hardware_ns);
  scm_timestamping hardware_only{};
  hardware_only.ts[2] = {3, 4};
  k = parse_scm_timestamping(&hardware_only, sizeof hardware_only);
  EXPECT_FALSE(k.software_ns);
  EXPECT_EQ(k.hardware_ns, 3'000'000'004);
  // A truncated message carries nothing usable.
  k = parse_scm_timestamping(&both, sizeof both - 1);
  EXPECT_FALSE(k.software_ns || k.hardware_ns);
}

TEST(HardwareTimestamps, VethIsSoftwareOnly) {
  auto a = assess_hardware(veth(), "veth0");
  EXPECT_FALSE(a.available);
  EXPECT_EQ(a.reason, "veth0: driver offers no hardware RX/TX timestamps (software only)");
}

TEST(HardwareTimestamps, EachMissingPieceIsNamed) {
  auto no_clock = connectx5();
  no_clock.phc_index = -1;
  EXPECT_EQ(assess_hardware(no_clock, "eth0").reason, "eth0: no PTP hardware clock");
  auto no_tx_on = connectx5();
  no_tx_on.tx_types = 1u << HWTSTAMP_TX_OFF;
  EXPECT_NE(assess_hardware(no_tx_on, "eth0").reason.find("HWTSTAMP_TX_ON"), std::string::npos);
  // Intel 82599 (ixgbe): PTP-only RX filters, as lancet §2.1 describes.
  auto ptp_only = connectx5();
  ptp_only.rx_filters = (1u << HWTSTAMP_FILTER_NONE) | (1u << HWTSTAMP_FILTER_PTP_V1_L4_SYNC) |
                        (1u << HWTSTAMP_FILTER_PTP_V2_EVENT);
  auto a = assess_hardware(ptp_only, "eth0");
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("HWTSTAMP_FILTER_ALL"), std::string::npos);
}

TEST(HardwareTimestamps, LoopbackPlanIsSoftwareWithTheReason) {
  EXPECT_EQ(route_interface("127.0.0.1"), "lo");
  auto plan = plan_timestamps("127.0.0.1");
  EXPECT_EQ(plan.source, TimestampSource::kSoftware);
  EXPECT_EQ(plan.interface, "lo");
  EXPECT_EQ(plan.hardware, nullptr);
  EXPECT_EQ(plan.note.rfind("hardware timestamps not used: lo: ", 0), 0u) << plan.note;
  EXPECT_THROW(route_interface("not-an-address"), std::invalid_argument);
}

TEST(HardwareTimestamps, EnablingOnLoopbackFailsCleanly) {
  // lo has no hardware stamping: SIOCGHWTSTAMP/SIOCSHWTSTAMP must throw a
  // system_error naming the call, and leave nothing behind.
  try {
    HardwareTimestamping hw("lo");
    FAIL() << "SIOCSHWTSTAMP succeeded on lo";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("HWTSTAMP on lo"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nabla::loadgen
