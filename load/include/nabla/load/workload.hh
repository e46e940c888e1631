#pragma once
// The workload of a load run: what is sent to which target, on how many
// connections, in which mix. `nabla load` takes it from flags, a campaign
// (`nabla run`) from its file's [workload] table; both hand the raw values to
// parse_workload(), the one rule set, and both build their engine with
// engine_config().
//
// Errors are std::invalid_argument starting with the name the value came
// from, as the front end calls it (WorkloadKeys): "--mix: ..." for a flag,
// "workload.mix: ..." for a key of the campaign file. Where the two front
// ends write a value differently (the mix: "/a=0.7,/b=0.3" on the command
// line, a TOML table in the file) each front end turns its syntax into the
// same WorkloadInput; the rules below never see the syntax.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nabla/loadgen/engine.hh"

namespace nabla::load {

// How a front end names each workload value in its errors: `prefix` + the
// key, e.g. "" + "--mix" or "workload." + "mix". A message that refers to
// another value names it by its bare key ("give either --insecure or
// --ca-file", "give insecure or ca_file").
struct WorkloadKeys {
  std::string prefix;
  std::string target = "target";
  std::string connections = "connections";
  std::string threads = "threads";
  std::string outstanding = "outstanding";
  std::string streams_per_connection = "streams_per_connection";
  std::string interarrival = "interarrival";
  std::string mix = "mix";
  std::string keys = "keys";
  std::string key_dist = "key_dist";
  std::string value_size = "value_size";
  std::string ca_file = "ca_file";
  std::string insecure = "insecure";
  std::string server_name = "server_name";
  std::string grpc_methods = "grpc_methods";
  std::string grpc_messages = "grpc_messages";
  std::string timeout = "timeout";
  // A group of settings refused together on a target without them (TLS
  // settings, gRPC settings) is reported under this name when set, else
  // under the key of the setting given.
  std::string tls_group;
  std::string grpc_group;

  std::string key(const std::string& bare) const { return prefix + bare; }
};

// `nabla load`'s flags: --target, --mix, --grpc-method, ...
WorkloadKeys flag_keys();
// A TOML table's keys: "<table>.target", "<table>.mix", ...
WorkloadKeys table_keys(const std::string& table);

struct Target {
  // http | https | h2 | h2c | grpc | grpcs | memcache | redis | echo | sockperf
  std::string scheme;
  std::string host;  // an address literal, or a name until it is resolved
  std::uint16_t port = 0;
  std::string path;       // http, https, h2 and h2c only
  std::string host_name;  // the DNS name `host` was resolved from; empty for a literal
};

// What a front end serves: its schemes (in the order its errors list them),
// whether a target may carry a path and whether a scheme's well-known port
// may be left out.
struct TargetRules {
  std::vector<std::string> schemes;
  bool paths = true;
  bool default_ports = true;
};

// Every scheme, paths and default ports: `nabla load`.
TargetRules load_target_rules();

// "scheme://H:P[/path]"; "localhost" is 127.0.0.1 and an IPv6 literal is
// kept as inet_ntop prints it. Throws std::invalid_argument naming `key`.
Target parse_target(const std::string& text, const std::string& key, const TargetRules& rules);

using Mix = std::vector<std::pair<std::string, double>>;  // name -> weight, in order

// The command line's mix, "NAME=WEIGHT,NAME=WEIGHT"; nullopt for "" (no mix
// given). Throws naming `key` for an item that is not NAME=NUMBER.
std::optional<Mix> parse_mix_list(const std::string& text, const std::string& key);

// A gRPC method called and its request message (protobuf wire bytes, read
// from message_file when the workload is parsed; empty without one).
struct WorkloadMethod {
  std::string method;  // /package.Service/Method
  std::string message_file;
  std::string message;
};

// The raw values as the front end got them (each front end sets its own
// defaults before parsing).
struct WorkloadInput {
  std::string target;
  TargetRules rules = load_target_rules();
  std::int64_t connections = 1;
  std::int64_t threads = 1;
  std::int64_t outstanding = 1;
  std::optional<std::int64_t> streams_per_connection;  // nullopt: not given
  std::string interarrival = "exp";
  std::optional<Mix> mix;  // nullopt: not given
  std::uint64_t keys = 1000;
  std::string key_dist = "uniform";
  std::size_t value_size = 32;
  std::string ca_file;
  bool insecure = false;
  std::string server_name;
  std::vector<std::string> grpc_methods;
  std::vector<std::string> grpc_messages;  // one per method, one for all, or none
  std::int64_t timeout_ns = 1'000'000'000;
  std::uint64_t seed = 1;
};

// The typed workload.
struct Workload {
  std::string target;  // as written
  std::string scheme = "http";
  std::string host;  // address literal, or a name until it is resolved
  std::uint16_t port = 0;
  std::string path;       // http, https, h2, h2c: the target's ("/" when none)
  std::string host_name;  // the DNS name `host` was resolved from (Host header, TLS name)
  int connections = 1;
  int threads = 1;
  int outstanding = 1;  // requests in flight per connection (K)
  // HTTP/2 and gRPC: streams per connection, the K of `outstanding`; 0: as
  // `outstanding` says.
  int streams_per_connection = 0;
  std::string interarrival = "exp";  // exp | fixed | uniform | lognormal:SIGMA
  double lognormal_sigma = 1.0;
  // Each transaction type and its weight: the URLs (HTTP; the target's path
  // when no mix is given), the gRPC methods (each once; weight 1 when no mix
  // is given), get/set (memcache, redis; empty: the protocol's default) or
  // the one echo type.
  Mix mix;
  // memcache and redis: key space, popularity, SET value size.
  std::uint64_t keys = 1000;
  std::string key_dist = "uniform";  // uniform | zipf[:S]
  double zipf_s = 0.99;
  std::size_t value_size = 32;
  // TLS (https, h2, grpcs): trust anchors (empty: the system's), no check at
  // all, the name the certificate must carry (empty: the target's name).
  std::string ca_file;
  bool insecure = false;
  std::string server_name;
  std::vector<WorkloadMethod> grpc_methods;
  std::int64_t timeout_ns = 1'000'000'000;
  std::uint64_t seed = 1;

  bool tls() const;    // https, h2, grpcs
  bool grpc() const;   // grpc, grpcs
  bool http2() const;  // h2, h2c, grpc, grpcs
  Target target_parts() const;
};

// Throws std::invalid_argument naming the value (keys) for anything bad;
// reads the gRPC message files.
Workload parse_workload(const WorkloadInput& input, const WorkloadKeys& keys);

// The engine of this workload: target, concurrency, schedule kind (the rate
// is the caller's), protocol and mix, TLS, request timeout and seed.
// `sessions` keeps the TLS sessions the server issued across engines (null:
// each engine its own). Settings of the measuring host (timestamps, CPUs,
// send timing) and of the run (rate, duration) are the caller's.
loadgen::EngineConfig engine_config(const Workload& workload,
                                    std::shared_ptr<loadgen::TlsSessionCache> sessions = nullptr);

}  // namespace nabla::load
