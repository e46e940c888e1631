// The workload as a load run and its result as records; see load.hh.
#include "load.hh"

namespace nabla::campaign {

loadgen::EngineConfig engine_config(const WorkloadSpec& w, std::int64_t duration_ns,
                                    std::uint64_t seed,
                                    std::shared_ptr<loadgen::TlsSessionCache> sessions) {
  loadgen::EngineConfig c = load::engine_config(w, std::move(sessions));
  c.schedule.rate_per_s = w.rate_rps;
  c.duration_ns = duration_ns;
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
