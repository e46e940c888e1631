// The workload as a load run and its result as records; see load.hh.
#include "load.hh"

namespace nabla::campaign {

loadgen::EngineConfig engine_config(const WorkloadSpec& w, std::int64_t duration_ns,
                                    std::uint64_t seed,
                                    std::shared_ptr<loadgen::TlsSessionCache> sessions) {
  loadgen::EngineConfig c;
  c.host = w.host;
  c.port = w.port;
  c.threads = w.threads;
  c.connections = w.connections;
  c.max_outstanding = w.outstanding;
  c.schedule.rate_per_s = w.rate_rps;
  if (w.interarrival == "fixed") {
    c.schedule.kind = loadgen::ScheduleKind::kFixed;
  } else if (w.interarrival == "uniform") {
    c.schedule.kind = loadgen::ScheduleKind::kUniform;
  } else if (w.interarrival.rfind("lognormal", 0) == 0) {
    c.schedule.kind = loadgen::ScheduleKind::kLognormal;
    c.schedule.lognormal_sigma = w.lognormal_sigma;
  }
  const std::string& name = w.host_name.empty() ? w.host : w.host_name;
  using Kind = loadgen::ProtocolSpec::Kind;
  if (w.scheme == "echo") {
    c.protocol.kind = Kind::kEcho;
  } else if (w.scheme == "grpc" || w.scheme == "grpcs") {
    c.protocol.kind = Kind::kGrpc;
    for (const WorkloadMethod& m : w.grpc_methods) {
      double weight = 1.0;
      for (const auto& [method, wt] : w.mix) {
        if (method == m.method) weight = wt;
      }
      c.protocol.grpc_calls.push_back({m.method, m.message, weight});
    }
  } else {
    c.protocol.kind = w.scheme == "h2" || w.scheme == "h2c" ? Kind::kHttp2 : Kind::kHttp;
    c.protocol.urls.clear();
    for (const auto& [url, weight] : w.mix) c.protocol.urls.push_back({url, weight});
  }
  c.protocol.host_header = loadgen::http_host_header(name);
  c.protocol.scheme = w.scheme == "h2" || w.scheme == "grpcs" ? "https" : "http";
  if (w.scheme == "https" || w.scheme == "h2" || w.scheme == "grpcs") {
    c.tls.enabled = true;
    c.tls.verify = !w.insecure;
    c.tls.ca_file = w.ca_file;
    c.tls.server_name = !w.server_name.empty() ? w.server_name : w.host_name;
    c.tls.sessions = std::move(sessions);
  }
  if (w.streams_per_connection > 0) c.max_outstanding = w.streams_per_connection;
  c.duration_ns = duration_ns;
  c.request_timeout_ns = w.timeout_ns;
  c.seed = seed;
  c.record_intended = true;  // failures per window (experiments)
  return c;
}

// Each request's response time (loadgen::response_ns): from when the client
// was ready to send it, so the client's own timer lateness, which on a
// shared machine rises and falls with the injector's and the tiers' work
// in step with the wave, is not read as part of the service's gradient.
std::vector<analysis::LatencyRecord> to_records(const loadgen::EngineResult& r) {
  std::vector<analysis::LatencyRecord> out;
  out.reserve(r.samples.size());
  for (const loadgen::Sample& s : r.samples) {
    out.push_back({s.intended_ns, loadgen::response_ns(s), static_cast<std::int32_t>(s.type)});
  }
  return out;
}

db::TimestampSource db_source(const loadgen::EngineResult& r) {
  if (r.samples.empty()) return db::TimestampSource::kUser;
  switch (r.samples.front().source) {
    case loadgen::TimestampSource::kHardware:
      return db::TimestampSource::kHardware;
    case loadgen::TimestampSource::kSoftware:
      return db::TimestampSource::kSoftware;
    case loadgen::TimestampSource::kUser:
      break;
  }
  return db::TimestampSource::kUser;
}

std::vector<analysis::LatencyRecord> of_type(const std::vector<analysis::LatencyRecord>& r,
                                             std::int32_t type) {
  std::vector<analysis::LatencyRecord> out;
  for (const auto& x : r) {
    if (x.type == type) out.push_back(x);
  }
  return out;
}

}  // namespace nabla::campaign
