// nabla-injectd's result messages; see protocol/injectd.hh.
#include <stdexcept>

#include "nabla/common/protocol/injectd.hh"
#include "protocol_fields.hh"

namespace nabla::common::protocol {

using nlohmann::json;

namespace {

json counters_json(const PacketCounters& c) {
  return json{{"packets", c.packets},     {"bytes", c.bytes},
              {"delayed", c.delayed},     {"dropped", c.dropped},
              {"corrupted", c.corrupted}, {"duplicated", c.duplicated},
              {"reordered", c.reordered}, {"queue_full", c.queue_full},
              {"enobufs", c.enobufs},     {"verdict_errors", c.verdict_errors}};
}

PacketCounters read_counters(const ObjectReader& in) {
  PacketCounters c;
  c.packets = in.unsigned_integer("packets");
  c.bytes = in.unsigned_integer("bytes");
  c.delayed = in.unsigned_integer("delayed");
  c.dropped = in.unsigned_integer("dropped");
  c.corrupted = in.unsigned_integer("corrupted");
  c.duplicated = in.unsigned_integer("duplicated");
  c.reordered = in.unsigned_integer("reordered");
  c.queue_full = in.unsigned_integer("queue_full");
  c.enobufs = in.unsigned_integer("enobufs");
  c.verdict_errors = in.unsigned_integer("verdict_errors");
  return c;
}

json queue_json(const QueueStats& q) {
  return json{{"held", q.held},
              {"queue_maxlen", q.queue_maxlen},
              {"id_gaps", q.id_gaps},
              {"batch_verdicts", q.batch_verdicts},
              {"verdicts", q.verdicts},
              {"kernel_stamped", q.kernel_stamped},
              {"receive_calls", q.receive_calls},
              {"verdict_sends", q.verdict_sends},
              {"verdict_send_ns", q.verdict_send_ns},
              {"loop_wakeups", q.loop_wakeups}};
}

QueueStats read_queue(const ObjectReader& in) {
  QueueStats q;
  q.held = in.unsigned_integer("held");
  q.queue_maxlen = static_cast<uint32_t>(in.unsigned_integer("queue_maxlen", UINT32_MAX));
  q.id_gaps = in.unsigned_integer("id_gaps");
  q.batch_verdicts = in.unsigned_integer("batch_verdicts");
  q.verdicts = in.unsigned_integer("verdicts");
  q.kernel_stamped = in.unsigned_integer("kernel_stamped");
  q.receive_calls = in.unsigned_integer("receive_calls");
  q.verdict_sends = in.unsigned_integer("verdict_sends");
  q.verdict_send_ns = in.unsigned_integer("verdict_send_ns");
  q.loop_wakeups = in.unsigned_integer("loop_wakeups");
  return q;
}

json kernel_json(const KernelQueueStats& k) {
  return json{{"queue_total", k.queue_total},
              {"queue_dropped", k.queue_dropped},
              {"user_dropped", k.user_dropped},
              {"id_sequence", k.id_sequence}};
}

KernelQueueStats read_kernel(const ObjectReader& in) {
  return KernelQueueStats{in.unsigned_integer("queue_total"), in.unsigned_integer("queue_dropped"),
                          in.unsigned_integer("user_dropped"), in.unsigned_integer("id_sequence")};
}

json lateness_json(const InjectorInfo::Lateness& l) {
  return json{{"p50", l.p50_us}, {"p90", l.p90_us},      {"p99", l.p99_us},
              {"max", l.max_us}, {"samples", l.samples}, {"recorded", l.recorded}};
}

InjectorInfo::Timer read_timer(const ObjectReader& in) {
  InjectorInfo::Timer t;
  const std::string mode = in.string("mode");
  if (mode != "self-calibrated" && mode != "fixed") {
    bad_field(in.path("mode"), "must be self-calibrated|fixed, got '" + mode + "'");
  }
  t.self_calibrated = mode == "self-calibrated";
  t.lead_us = in.number("lead_us");
  const ObjectReader l = in.object("wakeup_lateness_us");
  t.wakeup_lateness = {l.number("p50"),
                       l.number("p90"),
                       l.number("p99"),
                       l.number("max"),
                       l.unsigned_integer("samples"),
                       l.unsigned_integer("recorded")};
  t.polled_s = in.number("polled_s");
  t.polled_fraction = in.number("polled_fraction");
  return t;
}

}  // namespace

json InjectionDescription::to_json() const {
  return json{{"id", id},
              {"link", link},
              {"direction", std::string(protocol::to_string(direction))},
              {"queue_num", queue_num},
              {"seed", seed},
              {"delay", delay.to_result_json()},
              {"lease_s", lease_s},
              {"lease_remaining_s", lease_remaining_s},
              {"running_s", running_s},
              {"owner", owner},
              {"release", std::string(protocol::to_string(release))}};
}

InjectionDescription InjectionDescription::from_json(const json& result) {
  const ObjectReader in(result, "");
  InjectionDescription d;
  d.id = in.string("id");
  d.link = in.string("link");
  try {
    d.direction = parse_direction(in.string("direction"));
  } catch (const std::invalid_argument& e) {
    bad_field("direction", e.what());
  }
  d.queue_num = static_cast<uint16_t>(in.unsigned_integer("queue_num", UINT16_MAX));
  d.seed = in.unsigned_integer("seed");
  d.delay = Wave::from_result_json(in.require("delay"), "delay");
  d.lease_s = in.number("lease_s");
  d.lease_remaining_s = in.number("lease_remaining_s");
  d.running_s = in.number("running_s");
  if (const json* owner = in.find("owner")) {
    if (!owner->is_string()) bad_field("owner", "must be a string");
    d.owner = owner->get<std::string>();
  }
  if (const json* release = in.find("release")) {
    if (!release->is_string()) bad_field("release", "must be spin|sleep");
    try {
      d.release = parse_release(release->get<std::string>());
    } catch (const std::invalid_argument& e) {
      bad_field("release", e.what());
    }
  }
  return d;
}

json DelaySummary::to_json() const {
  return json{{"count", count}, {"mean", mean_ns}, {"std", std_ns}, {"p50", p50_ns},
              {"p99", p99_ns},  {"min", min_ns},   {"max", max_ns}};
}

DelaySummary DelaySummary::from_json(const json& value, const std::string& path) {
  const ObjectReader in(value, path);
  return DelaySummary{in.unsigned_integer("count"),
                      in.number("mean"),
                      in.number("std"),
                      in.integer("p50"),
                      in.integer("p99"),
                      in.integer("min"),
                      in.integer("max")};
}

json InjectionStats::to_json() const {
  json out = counters_json(counters);
  out["actual_delay_ns"] = actual_delay.to_json();
  out["halves"] = {{"high", high.to_json()}, {"low", low.to_json()}};
  if (cycles) {
    json list = json::array();
    for (const CycleDelay& c : *cycles) {
      list.push_back({{"cycle", c.cycle}, {"high", c.high.to_json()}, {"low", c.low.to_json()}});
    }
    out["cycles"] = std::move(list);
  }
  return out;
}

InjectionStats InjectionStats::from_json(const json& value, const std::string& path) {
  const ObjectReader in(value, path);
  InjectionStats s;
  s.counters = read_counters(in);
  s.actual_delay =
      DelaySummary::from_json(in.require("actual_delay_ns"), in.path("actual_delay_ns"));
  const ObjectReader halves = in.object("halves");
  s.high = DelaySummary::from_json(halves.require("high"), halves.path("high"));
  s.low = DelaySummary::from_json(halves.require("low"), halves.path("low"));
  if (const json* cycles = in.find("cycles")) {
    if (!cycles->is_array()) bad_field(in.path("cycles"), "must be an array");
    s.cycles.emplace();
    for (size_t i = 0; i < cycles->size(); ++i) {
      const ObjectReader c((*cycles)[i], in.path("cycles") + "[" + std::to_string(i) + "]");
      s.cycles->push_back({c.integer("cycle"),
                           DelaySummary::from_json(c.require("high"), c.path("high")),
                           DelaySummary::from_json(c.require("low"), c.path("low"))});
    }
  }
  return s;
}

json InjectStopResult::to_json() const {
  json out = injection.to_json();
  if (stats) {
    out["stats"] = stats->to_json();
    out["stats"]["seed"] = injection.seed;
  }
  return out;
}

InjectStopResult InjectStopResult::from_json(const json& result) {
  InjectStopResult r{InjectionDescription::from_json(result), std::nullopt};
  const ObjectReader in(result, "");
  if (const json* stats = in.find("stats")) r.stats = InjectionStats::from_json(*stats, "stats");
  return r;
}

json InjectStatsResult::to_json() const {
  json out = injection.to_json();
  if (stats) out.update(stats->to_json());
  if (queue) out.update(queue_json(*queue));
  if (kernel) out["kernel"] = kernel_json(*kernel);
  return out;
}

InjectStatsResult InjectStatsResult::from_json(const json& result) {
  InjectStatsResult r{InjectionDescription::from_json(result), {}, {}, {}};
  const ObjectReader in(result, "");
  if (in.find("packets") == nullptr) return r;
  r.stats = InjectionStats::from_json(result, "");
  r.queue = read_queue(in);
  if (in.find("kernel") != nullptr) r.kernel = read_kernel(in.object("kernel"));
  return r;
}

json InjectListResult::to_json() const {
  json list = json::array();
  for (const InjectionDescription& d : injections) list.push_back(d.to_json());
  return json{{"injections", std::move(list)}};
}

InjectListResult InjectListResult::from_json(const json& result) {
  const ObjectReader in(result, "");
  const json& list = in.require("injections");
  if (!list.is_array()) bad_field("injections", "must be an array");
  InjectListResult r;
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      r.injections.push_back(InjectionDescription::from_json(list[i]));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("injections[" + std::to_string(i) + "]." + e.what());
    }
  }
  return r;
}

json LeaseRenewResult::to_json() const {
  return json{{"id", id}, {"lease_remaining_s", lease_remaining_s}};
}

LeaseRenewResult LeaseRenewResult::from_json(const json& result) {
  const ObjectReader in(result, "");
  return LeaseRenewResult{in.string("id"), in.number("lease_remaining_s")};
}

json InjectorInfo::to_json() const {
  const Timer& t = timer;
  json out{{"name", name},
           {"version", version},
           {"pid", pid},
           {"queue_base", queue_base},
           {"queue_maxlen", queue_maxlen},
           {"max_injections", max_injections},
           {"timer",
            {{"mode", t.self_calibrated ? "self-calibrated" : "fixed"},
             {"lead_us", t.lead_us},
             {"wakeup_lateness_us", lateness_json(t.wakeup_lateness)},
             {"polled_s", t.polled_s},
             {"polled_fraction", t.polled_fraction}}},
           {"busy_poll_us", busy_poll_us},
           {"cpu_latency",
            {{"limit_us", cpu_latency.limit_us ? json(*cpu_latency.limit_us) : json()},
             {"held", cpu_latency.held},
             {"error", cpu_latency.error}}},
           {"injections", injections},
           {"uptime_s", uptime_s}};
  node.write_to(out);
  control.write_to(out);
  return out;
}

InjectorInfo InjectorInfo::from_json(const json& result) {
  const ObjectReader in(result, "");
  InjectorInfo info;
  info.name = in.string("name");
  info.version = in.string("version");
  info.pid = in.integer("pid");
  info.queue_base = static_cast<uint16_t>(in.unsigned_integer("queue_base", UINT16_MAX));
  info.queue_maxlen = static_cast<uint32_t>(in.unsigned_integer("queue_maxlen", UINT32_MAX));
  info.max_injections = in.integer("max_injections");
  info.timer = read_timer(in.object("timer"));
  info.busy_poll_us = in.integer("busy_poll_us");
  const ObjectReader cpu = in.object("cpu_latency");
  if (cpu.find("limit_us") != nullptr) {
    info.cpu_latency.limit_us = static_cast<int32_t>(cpu.integer("limit_us"));
  }
  info.cpu_latency.held = cpu.boolean("held");
  info.cpu_latency.error = cpu.string("error");
  info.injections = in.unsigned_integer("injections");
  info.uptime_s = in.number("uptime_s");
  info.node = NodeFacts::read_from(result);
  info.control = ControlCounters::read_from(result);
  return info;
}

}  // namespace nabla::common::protocol
