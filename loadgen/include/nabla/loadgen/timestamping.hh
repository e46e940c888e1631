#pragma once
// Socket timestamps for the load engine (DESIGN.md "Timestamps", lancet §5).
//
// Software timestamps: SO_TIMESTAMPING with RX_SOFTWARE | TX_SOFTWARE |
// SOFTWARE | OPT_ID | OPT_TSONLY. RX stamps arrive as SCM_TIMESTAMPING control
// messages on recvmsg(); on TCP the stamp of one recvmsg belongs to the last
// skb read, i.e. the last byte returned (lancet §5), which is the byte that
// completes a response. Kernel stamps are CLOCK_REALTIME; they are converted
// to the monotonic clock with an offset measured by clock_offset_ns().
//
// TX stamps (SCM_TSTAMP_SND, "handed to the driver") come back on the error
// queue (MSG_ERRQUEUE, which also raises EPOLLERR until drained). With OPT_ID
// on TCP the key is the byte offset of the last byte of the send since
// timestamping was enabled, so a request whose last byte has offset <= key
// left by that stamp. Hardware timestamping is only detected
// (detect_hardware) and reported absent with its reason; enabling it
// (SIOCSHWTSTAMP) is not done.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nabla::loadgen {

enum class TimestampSource { kHardware, kSoftware, kUser };
const char* to_string(TimestampSource source);

struct HardwareTimestampInfo {
  bool available = false;
  std::string reason;  // why not, when !available
};

// Asks the driver of `interface` (ETHTOOL_GET_TS_INFO) whether it has a PTP
// clock with hardware RX/TX timestamps. Never throws: failures become reasons.
HardwareTimestampInfo detect_hardware(const std::string& interface);

// Enables software RX/TX timestamping on a socket; throws std::system_error
// naming setsockopt(SO_TIMESTAMPING) on failure.
void enable_software_timestamps(int fd);

// realtime - monotonic, sampled as the middle of two monotonic reads.
int64_t clock_offset_ns();

struct RecvResult {
  long bytes = 0;                         // recvmsg() return value (-1 with errno)
  std::optional<int64_t> software_rx_ns;  // CLOCK_REALTIME ns of the last byte
};

// recvmsg() into buf with room for the timestamp control message.
RecvResult recv_with_timestamp(int fd, char* buf, size_t len);

struct TxTimestamp {
  uint32_t byte_key = 0;    // offset of the last byte covered (OPT_ID on TCP)
  int64_t software_ns = 0;  // CLOCK_REALTIME
};

// Drains the socket's error queue; returns its SCM_TSTAMP_SND stamps in order.
// Never throws (data path).
std::vector<TxTimestamp> read_tx_timestamps(int fd);

}  // namespace nabla::loadgen
