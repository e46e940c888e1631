#include "nabla/loadgen/timestamping.hh"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <system_error>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/fd.hh"

// Loopback only: a TCP pair on 127.0.0.1 made by the test.
namespace nabla::loadgen {
namespace {

struct TcpPair {
  common::FileDescriptor client, server;
};

TcpPair make_pair() {
  common::FileDescriptor lst(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(lst.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(lst.get(), 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(lst.get(), reinterpret_cast<sockaddr*>(&a), &len);
  TcpPair p;
  p.client = common::FileDescriptor(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(p.client.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  p.server = common::FileDescriptor(::accept(lst.get(), nullptr, nullptr));
  return p;
}

void wait_readable(int fd, short events = POLLIN) {
  pollfd p{fd, events, 0};
  ::poll(&p, 1, 2000);
}

TEST(Timestamping, LoopbackAndMissingInterfacesReportNoHardwareWithAReason) {
  auto lo = detect_hardware("lo");
  EXPECT_FALSE(lo.available);
  EXPECT_NE(lo.reason.find("lo"), std::string::npos) << lo.reason;
  auto missing = detect_hardware("nablanope0");
  EXPECT_FALSE(missing.available);
  EXPECT_NE(missing.reason.find("ETHTOOL_GET_TS_INFO"), std::string::npos) << missing.reason;
  EXPECT_FALSE(detect_hardware("").available);
  EXPECT_STREQ(to_string(TimestampSource::kSoftware), "software");
  EXPECT_STREQ(to_string(TimestampSource::kHardware), "hardware");
  EXPECT_STREQ(to_string(TimestampSource::kUser), "user");
}

TEST(Timestamping, UnconnectedTcpSocketIsRefusedNamingTheCall) {
  common::FileDescriptor fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  try {
    enable_software_timestamps(fd.get());
    FAIL() << "expected std::system_error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("SO_TIMESTAMPING"), std::string::npos);
  }
}

// The kernel turns software RX stamping on for the whole stack through a
// deferred static key (net_enable_timestamp schedules work the first time a
// socket asks), so on an otherwise idle machine the first segments after
// enable_software_timestamps() can arrive unstamped. Keep sending (bounded)
// until one is stamped; then its stamp must lie between send and receive.
TEST(Timestamping, SoftwareRxStampLiesBetweenSendAndReceive) {
  TcpPair p = make_pair();
  enable_software_timestamps(p.client.get());
  bool stamped = false;
  for (int attempt = 0; attempt < 100 && !stamped; ++attempt) {
    const int64_t before = common::realtime_ns();
    ASSERT_EQ(::send(p.server.get(), "hello", 5, 0), 5);
    wait_readable(p.client.get());
    char buf[16];
    RecvResult r = recv_with_timestamp(p.client.get(), buf, sizeof buf);
    const int64_t after = common::realtime_ns();
    ASSERT_EQ(r.bytes, 5);
    if (!r.software_rx_ns) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    stamped = true;
    EXPECT_GE(*r.software_rx_ns, before);
    EXPECT_LE(*r.software_rx_ns, after);
  }
  EXPECT_TRUE(stamped) << "no software RX timestamp within 100 segments";
}

TEST(Timestamping, TxStampsCarryTheByteOffsetOfTheLastByte) {
  TcpPair p = make_pair();
  enable_software_timestamps(p.client.get());
  const int64_t before = common::realtime_ns();
  ASSERT_EQ(::send(p.client.get(), "abcd", 4, 0), 4);    // bytes 0..3
  ASSERT_EQ(::send(p.client.get(), "efghij", 6, 0), 6);  // bytes 4..9
  std::vector<TxTimestamp> got;
  for (int i = 0; i < 20 && got.size() < 2; ++i) {
    wait_readable(p.client.get(), POLLERR);
    auto more = read_tx_timestamps(p.client.get());
    got.insert(got.end(), more.begin(), more.end());
  }
  const int64_t after = common::realtime_ns();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].byte_key, 3u);
  EXPECT_EQ(got[1].byte_key, 9u);
  for (auto& t : got) {
    EXPECT_GE(t.software_ns, before);
    EXPECT_LE(t.software_ns, after);
  }
  EXPECT_TRUE(read_tx_timestamps(p.client.get()).empty());  // drained
}

TEST(Timestamping, ClockOffsetMatchesTheTwoClocks) {
  const int64_t expected = common::realtime_ns() - common::monotonic_ns();
  EXPECT_NEAR(static_cast<double>(clock_offset_ns()), static_cast<double>(expected), 1e6);
}

}  // namespace
}  // namespace nabla::loadgen
