#pragma once
// Socket timestamps for the load engine (docs/method.md, "Timestamps"; lancet §5).
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
// left by that stamp.
//
// Hardware: detect_hardware() asks the driver (ETHTOOL_GET_TS_INFO) and
// assess_hardware() decides on the answer (a plain struct, so recorded
// answers of real NICs can be tested); HardwareTimestamping enables NIC
// stamping with SIOCSHWTSTAMP and restores the previous setting when it goes
// away; plan_timestamps() does all three for the interface that routes to a
// target and says which source a run will use and why.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nabla/common/hw_timestamps.hh"

namespace nabla::loadgen {

enum class TimestampSource { kHardware, kSoftware, kUser };
const char* to_string(TimestampSource source);

// Detection lives in common/ (daemons report it in daemon.info too).
using common::assess_hardware;
using common::detect_hardware;
using common::DriverTimestampInfo;
using common::HardwareTimestampInfo;

// NIC timestamping switched on (SIOCSHWTSTAMP: TX on, RX filter ALL) for the
// life of the object; the previous configuration (SIOCGHWTSTAMP) is restored
// by the destructor. Needs CAP_NET_ADMIN.
class HardwareTimestamping {
 public:
  // Throws std::system_error naming SIOCGHWTSTAMP/SIOCSHWTSTAMP on failure.
  explicit HardwareTimestamping(const std::string& interface);
  ~HardwareTimestamping();
  HardwareTimestamping(const HardwareTimestamping&) = delete;
  HardwareTimestamping& operator=(const HardwareTimestamping&) = delete;

 private:
  std::string interface_;
  int previous_tx_ = 0;
  int previous_rx_ = 0;
};

// The interface the kernel routes `host` (an IPv4 or IPv6 literal) through
// (a connected UDP socket's local address, matched with getifaddrs). Throws
// std::system_error, or std::invalid_argument for text that is not an
// address literal.
std::string route_interface(const std::string& host);

struct TimestampPlan {
  TimestampSource source = TimestampSource::kSoftware;
  std::string interface;
  std::string note;                                // why hardware was not used (or what was done)
  std::unique_ptr<HardwareTimestamping> hardware;  // held for the run when enabled
  int phc_index = -1;                              // the NIC's PTP clock when hardware
};

// Which timestamps a run against `host` uses: hardware when the
// interface's driver offers them and SIOCSHWTSTAMP and the PHC (/dev/ptpN)
// both work (the engine maps PHC time to CLOCK_MONOTONIC, phc_clock.hh),
// else kernel software stamps, with the reason in `note`.
TimestampPlan plan_timestamps(const std::string& host);

// Enables software RX/TX timestamping on a socket; throws std::system_error
// naming setsockopt(SO_TIMESTAMPING) on failure.
void enable_software_timestamps(int fd);
// The same plus RX_HARDWARE | TX_HARDWARE | RAW_HARDWARE: raw NIC stamps
// (PHC time, ts[2]) next to the software ones, for a socket whose traffic
// leaves through an interface with hardware stamping enabled.
void enable_hardware_timestamps(int fd);

// One SCM_TIMESTAMPING control message: ts[0] (software, CLOCK_REALTIME) and
// ts[2] (raw hardware, PHC time), each absent when zero.
struct KernelStamps {
  std::optional<int64_t> software_ns;
  std::optional<int64_t> hardware_ns;
};
// `data` is CMSG_DATA of a SOL_SOCKET/SO_TIMESTAMPING message of `len` bytes;
// a short message yields no stamps.
KernelStamps parse_scm_timestamping(const void* data, size_t len);

// realtime - monotonic, sampled as the middle of two monotonic reads.
int64_t clock_offset_ns();

struct RecvResult {
  long bytes = 0;                         // recvmsg() return value (-1 with errno)
  std::optional<int64_t> software_rx_ns;  // CLOCK_REALTIME ns of the last byte
  std::optional<int64_t> hardware_rx_ns;  // raw PHC ns of the last byte (NIC stamping on)
};

// recvmsg() into buf with room for the timestamp control message.
RecvResult recv_with_timestamp(int fd, char* buf, size_t len);

struct TxTimestamp {
  uint32_t byte_key = 0;    // offset of the last byte covered (OPT_ID on TCP)
  int64_t software_ns = 0;  // CLOCK_REALTIME, 0 for a hardware-only stamp
  int64_t hardware_ns = 0;  // raw PHC time, 0 for a software stamp
};

// Drains the socket's error queue; returns its SCM_TSTAMP_SND stamps in order.
// Never throws (data path).
std::vector<TxTimestamp> read_tx_timestamps(int fd);
// The same into `out` (cleared first), for a data path that reuses its buffer.
// With `last_key` (the key of the last byte sent) it stops at that stamp
// instead of reading on to EAGAIN: one recvmsg fewer per wake-up.
void read_tx_timestamps(int fd, std::vector<TxTimestamp>& out,
                        std::optional<uint32_t> last_key = std::nullopt);

}  // namespace nabla::loadgen
