#pragma once
// nabla-tier configuration: what each URL costs and which downstream tiers it
// calls, in which pattern.
//
// # Pattern language (README-ready)
//
// A tier serves URLs. Each URL has a service time, a response size and an
// ordered list of downstream calls. A call names a tier, a pattern and the
// path to request there (default: the incoming path):
//
//   TIER:PATTERN[:PATH]     e.g.  db:serial:3   audit:async:/log   app:parallel:4:/q
//
//   PATTERN      what the tier does for one incoming request
//   serial:K     K requests to TIER, one after another (each waits for the last)
//   parallel:K   K concurrent requests to TIER on K pooled connections; waits for all
//   async        one request handed to a background sender; the response does not wait
//   none         no call (a placeholder, e.g. to switch a call off in a config)
//
// Calls of one URL run in the order listed, after the URL's service time.
//
// Service time:  fixed:D | exp:MEAN | bimodal:P:D1:D2 | lognormal:MEDIAN:SIGMA
// (durations like 250us, 1.5ms, 2s; bimodal draws D1 with probability P,
// else D2; lognormal has the given median and log-space sigma) and a mode:
// `spin` burns CPU (a busy worker, as compute-bound tiers are), `sleep`
// blocks the worker thread (as an I/O-bound tier is).
//
// # True link gradients implied by a pattern
//
// The link gradient dRT/dl of a (URL, link) pair is the change in the URL's
// mean response time per unit of one-way latency added on that link in one
// direction. A call pattern crossing link L from this tier to TIER implies:
//
//   serial:K    K per direction: each of the K calls crosses L once in each
//               direction and they are strictly sequential, so every added
//               one-way delay adds to the response time K times.
//   parallel:K  1 per direction, *if all K go over the same link L*: the K
//               calls overlap, so a delay on L delays all of them together and
//               the wait for the slowest grows by the delay once. If the K
//               calls went over K different links (different destination
//               hosts), a delay on one link delays only one call, and the
//               gradient would be below 1 (it depends on which call is the
//               slowest). nabla-tier sends all K calls of one pattern to the
//               same TIER address, so the gradient on that link is 1.
//   async       0: the response never waits on the call.
//   none        0.
//
// Gradients compose along the chain: if /view on web calls app serial:1 and
// app's /view calls db serial:3, then /view's gradient on the app→db link is
// 1 × 3 = 3 and on the web→app link 1. The request and response directions
// of a link are separate one-way links with the same gradient.
//
// # Example (the RUBiS-like demo, on the app tier)
//
//   [server]
//   listen = "0.0.0.0:8080"
//   workers = 4
//   seed = 1
//   [tiers]
//   db = "10.9.0.4:8080"
//   audit = "10.9.0.4:8081"
//   [[url]]
//   path = "/view"
//   service = "exp:200us"
//   mode = "spin"
//   response_bytes = 2048
//   calls = ["db:serial:3"]
//   [[url]]
//   path = "/auth"
//   service = "fixed:100us"
//   [[url]]
//   path = "/bid"
//   calls = ["db:serial:1", "audit:async:/audit"]
//   [[url]]
//   path = "/browse"
//   calls = ["db:parallel:4"]
//
// The same from flags:
//   nabla-tier --listen 0.0.0.0:8080 --tier db=10.9.0.4:8080
//     --url '/view service=exp:200us mode=spin bytes=2048 call=db:serial:3'
//     --url '/bid call=db:serial:1 call=audit:async:/audit'   (one command line)
//
// A URL spec with path `*` serves every path that has no spec of its own;
// without one, unknown paths get 404.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace nabla::tier {

// Parses "250us", "1.5ms", "2s", "100ns", "3m" (minutes) into nanoseconds.
// Throws std::invalid_argument naming `field` on a bad or negative value.
int64_t parse_tier_duration_ns(std::string_view text, std::string_view field);

enum class ServiceKind { kFixed, kExponential, kBimodal, kLognormal };
enum class ServiceMode { kSpin, kSleep };

// A service-time distribution. Draws are in nanoseconds, never negative.
struct ServiceTime {
  ServiceKind kind = ServiceKind::kFixed;
  int64_t a_ns = 0;  // fixed value, exponential mean, bimodal D1, lognormal median
  int64_t b_ns = 0;  // bimodal D2
  double p = 0.0;    // bimodal probability of D1; lognormal sigma

  // "fixed:D", "exp:MEAN" (also "exponential:"), "bimodal:P:D1:D2",
  // "lognormal:MEDIAN:SIGMA". Throws std::invalid_argument naming the field.
  static ServiceTime parse(std::string_view text);
  int64_t draw_ns(std::mt19937_64& rng) const;
  // The distribution's mean in ns (for documentation and tests).
  double mean_ns() const;
};

enum class CallPattern { kNone, kSerial, kParallel, kAsync };

struct DownstreamCall {
  std::string tier;  // a name from TierConfig::tiers
  CallPattern pattern = CallPattern::kNone;
  int count = 0;     // K for serial/parallel, 1 for async, 0 for none
  std::string path;  // empty: the incoming request's path

  // "TIER:serial:K[:PATH]", "TIER:parallel:K[:PATH]", "TIER:async[:PATH]",
  // "TIER:none". K in [1, 64]. PATH must start with '/'.
  static DownstreamCall parse(std::string_view text);
  // The true gradient of this call on the link to `tier`, per direction
  // (see the header comment): serial:K → K, parallel:K → 1, async/none → 0.
  int true_gradient() const;
};

// The call in the syntax parse() reads: "db:serial:3", "audit:async:/audit".
std::string to_string(const DownstreamCall& call);

struct UrlSpec {
  std::string path;  // "/view", or "*" for every otherwise unknown path
  ServiceTime service;
  ServiceMode mode = ServiceMode::kSpin;
  int64_t response_bytes = 0;  // body size, [0, 16 MiB]
  std::vector<DownstreamCall> calls;

  // "/view service=exp:200us mode=spin bytes=2048 call=db:serial:3 call=..."
  static UrlSpec parse(std::string_view text);
};

struct TierAddress {
  std::string host;  // numeric IPv4 or IPv6 address
  uint16_t port = 0;
  // "10.0.0.1:80", "[::1]:80". Throws std::invalid_argument naming `field`.
  static TierAddress parse(std::string_view text, std::string_view field);
};

struct TierConfig {
  TierAddress listen{"127.0.0.1", 8080};
  int workers = 4;    // [1, 256]
  uint64_t seed = 1;  // worker w uses seed + w
  int max_connections = 4096;
  std::map<std::string, TierAddress> tiers;
  std::vector<UrlSpec> urls;
  // A two-part response (--split-response, [server] split_response): the
  // first `split_response_bytes` bytes of every longer response (headers
  // first) are sent, the worker waits `split_pause_ns`, then sends the rest.
  // Splitting turns TCP_NODELAY off, so Nagle's algorithm holds the second
  // part until the client ACKs the first whenever that takes longer than the
  // pause: a delay on the response link then counts twice (gradient about
  // 2); with a client that ACKs at once only above the pause, once below it
  // (tier/README.md). 0 bytes: one send, TCP_NODELAY.
  int64_t split_response_bytes = 0;  // [0, 16 MiB]
  int64_t split_pause_ns = 200'000;  // [0, 1 s]
  // A worker waiting for its downstream replies blocks at most this long at
  // a time (--wait-slice, [server] wait_slice), then blocks again until they
  // are in. On a busy machine a thread woken after a long block wakes later
  // than after a short one, and a delay on a downstream link makes its
  // waits long: slices keep the wake-up as cheap as after a short block,
  // at the cost of a wake-up per slice. 0: one block until the replies.
  int64_t wait_slice_ns = 0;  // [0, 1 s]

  // Reads a TOML document (see the header comment). Throws
  // std::invalid_argument naming the key on a bad value.
  static TierConfig from_toml(std::string_view toml_text);
  // Checks cross references (every call's tier is defined, paths unique).
  void validate() const;
  // The spec serving `path`: exact match, else "*", else nullptr.
  const UrlSpec* find(std::string_view path) const;
};

}  // namespace nabla::tier
