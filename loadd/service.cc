// nabla-loadd's rounds; see service.hh.
#include "nabla/loadd/service.hh"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "nabla/common/log.hh"

namespace nabla::loadd {

struct LoadService::Round {
  std::string id;
  std::string owner;
  int64_t lease_ns = 0;
  int64_t last_poll_ns = 0;
  int64_t start_ns = 0;
  // Guarded by the service's mutex.
  protocol::RoundState state = protocol::RoundState::kRunning;
  std::string error;
  std::shared_ptr<const RoundReport> report;
  std::atomic<bool> stop{false};      // EngineConfig::stop
  std::atomic<bool> finished{false};  // the worker is past its body
  std::thread worker;
};

namespace {

using protocol::RoundState;

std::string seconds_text(int64_t ns) {
  std::ostringstream s;
  s << static_cast<double>(ns) / 1e9 << " s";
  return s.str();
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Every time of the result relative to the round's start on this clock.
void relative_to(loadgen::EngineResult& result, int64_t start_ns) {
  for (auto& s : result.samples) s.intended_ns -= start_ns;
  for (auto& t : result.intended_ns) t -= start_ns;
  if (result.scheduled > 0) {
    result.first_intended_ns -= start_ns;
    result.last_intended_ns -= start_ns;
  }
}

// The rate a schedule offers: its rate, or a trace's count over its span.
double offered_rate(const loadgen::ScheduleSpec& schedule) {
  if (schedule.kind != loadgen::ScheduleKind::kTrace) return schedule.rate_per_s;
  const auto& t = schedule.trace_ns;
  if (t.size() < 2 || t.back() <= t.front()) return 0;
  return static_cast<double>(t.size() - 1) * 1e9 / static_cast<double>(t.back() - t.front());
}

}  // namespace

bool Cidr::contains(const common::IpAddress& address) const {
  if (address.family() != network.family()) return false;
  const uint8_t* a = address.data();
  const uint8_t* n = network.data();
  int bits = prefix;
  for (std::size_t i = 0; i < address.size() && bits > 0; ++i, bits -= 8) {
    const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((a[i] & mask) != (n[i] & mask)) return false;
  }
  return true;
}

std::string Cidr::to_string() const {
  return network.to_string() + "/" + std::to_string(prefix);
}

Cidr Cidr::parse(const std::string& text) {
  const auto slash = text.find('/');
  const std::string address = text.substr(0, slash);
  const auto parsed = common::IpAddress::parse(address);
  if (!parsed) {
    throw std::invalid_argument("'" + text + "' is not an address or ADDRESS/PREFIX");
  }
  Cidr c{*parsed, static_cast<int>(parsed->size() * 8)};
  if (slash != std::string::npos) {
    const std::string bits = text.substr(slash + 1);
    std::size_t used = 0;
    int prefix = -1;
    try {
      prefix = std::stoi(bits, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (bits.empty() || used != bits.size() || prefix < 0 || prefix > c.prefix) {
      throw std::invalid_argument("'" + text + "': prefix must be 0 .. " +
                                  std::to_string(c.prefix));
    }
    c.prefix = prefix;
  }
  return c;
}

RoundReport run_round(const loadgen::EngineConfig& config, int64_t start_ns) {
  RoundReport report;
  report.result = loadgen::run_engine(config, start_ns);
  report.check = loadgen::check_calibration(report.result, config, {});
  return report;
}

LoadService::LoadService(ServiceOptions options, RoundBody body, std::function<int64_t()> clock)
    : options_(std::move(options)), body_(std::move(body)), clock_(std::move(clock)) {}

LoadService::~LoadService() {
  stop_all();
}

loadgen::EngineConfig local_engine(loadgen::EngineConfig engine, loadgen::AgentKind kind,
                                   const ServiceOptions& options) {
  engine.cpus = options.cpus;
  // Lancet's latency and symmetric agents stamp replies in the kernel; the
  // engine keeps the user clock where a stamp cannot be matched to a
  // request (TLS, HTTP/2). A throughput agent records nothing.
  engine.software_rx_timestamps = kind != loadgen::AgentKind::kThroughput;
  // Busy polling only where every microsecond is measured: on a latency
  // agent's few connections, not on a symmetric agent's many.
  engine.busy_poll_us = kind == loadgen::AgentKind::kLatency ? options.busy_poll_us : 0;
  return engine;
}

void LoadService::check_limits(const loadgen::EngineConfig& engine, loadgen::AgentKind kind) const {
  const Limits& l = options_.limits;
  const auto target = common::IpAddress::parse(engine.host);
  if (!target) {
    throw std::invalid_argument("engine.host: '" + engine.host + "' is not an address literal");
  }
  if (!l.allow_target.empty()) {
    bool allowed = false;
    std::string list;
    for (const Cidr& c : l.allow_target) {
      allowed = allowed || c.contains(*target);
      list += (list.empty() ? "" : ", ") + c.to_string();
    }
    if (!allowed) {
      throw std::invalid_argument("engine.host: " + engine.host +
                                  " is outside this agent's --allow-target (" + list + ")");
    }
  }
  const double rate = offered_rate(engine.schedule);
  if (!(rate <= l.max_rate)) {
    throw std::invalid_argument("engine.schedule.rate_per_s: " + number_text(rate) +
                                " is above this agent's --max-rate " + number_text(l.max_rate));
  }
  if (engine.threads > l.max_threads) {
    throw std::invalid_argument("engine.threads: " + std::to_string(engine.threads) +
                                " is above this agent's --max-threads " +
                                std::to_string(l.max_threads));
  }
  if (engine.connections > l.max_connections) {
    throw std::invalid_argument("engine.connections: " + std::to_string(engine.connections) +
                                " is above this agent's --max-connections " +
                                std::to_string(l.max_connections));
  }
  if (engine.duration_ns <= 0) {
    throw std::invalid_argument("engine.duration_ns: required by a load agent (at most " +
                                seconds_text(l.max_round_ns) + ")");
  }
  if (engine.duration_ns > l.max_round_ns) {
    throw std::invalid_argument("engine.duration_ns: " + seconds_text(engine.duration_ns) +
                                " is above this agent's --max-round-s " +
                                seconds_text(l.max_round_ns));
  }
  if (engine.record_samples && kind != loadgen::AgentKind::kThroughput) {
    // Every sample stays in memory until the coordinator fetches it.
    double expected = rate * static_cast<double>(engine.duration_ns) / 1e9;
    if (engine.max_requests > 0) {
      expected = std::min(expected, static_cast<double>(engine.max_requests));
    }
    if (expected > static_cast<double>(l.max_samples)) {
      throw std::invalid_argument("engine.schedule.rate_per_s: " + number_text(rate) + " rps for " +
                                  seconds_text(engine.duration_ns) + " records about " +
                                  std::to_string(static_cast<uint64_t>(std::ceil(expected))) +
                                  " samples, above this agent's --max-samples " +
                                  std::to_string(l.max_samples) +
                                  " (they are held in memory until fetched)");
    }
  }
}

protocol::LoadStartResult LoadService::start(StartRequest request) {
  check_limits(request.engine, request.kind);
  {
    std::lock_guard lock(mu_);
    if (current_) {
      Round& r = *current_;
      const int64_t now = clock_();
      if (r.state == RoundState::kRunning || !r.finished) {
        throw Refused("busy: round " + r.id + " of owner " + r.owner + " is " +
                      std::string(protocol::to_string(r.state)) + " (one round at a time)");
      }
      const bool lease_left = now - r.last_poll_ns <= r.lease_ns;
      if (r.owner != request.owner && lease_left) {
        throw Refused("busy: the result of round " + r.id + " of owner " + r.owner +
                      " is kept for another " + seconds_text(r.lease_ns - (now - r.last_poll_ns)));
      }
      retiring_.push_back(std::move(current_));
      current_.reset();
    }
  }
  reap(true);  // the rounds replaced have finished or were told to stop: bounded

  auto round = std::make_shared<Round>();
  loadgen::EngineConfig config = local_engine(std::move(request.engine), request.kind, options_);
  config.stop = &round->stop;
  {
    std::lock_guard lock(mu_);
    if (current_) throw Refused("busy: round " + current_->id + " started meanwhile");
    const int64_t now = clock_();
    round->id = "r" + std::to_string(next_id_++);
    round->owner = request.owner;
    round->lease_ns = request.lease_ns;
    round->last_poll_ns = now;
    round->start_ns = now + request.lead_ns;
    current_ = round;
  }
  common::log_info("round ", round->id, " of owner ", round->owner, ": ",
                   offered_rate(config.schedule), " rps to ", config.host, ":", config.port,
                   " for ", seconds_text(config.duration_ns));
  std::lock_guard lock(mu_);  // the worker's own lock waits for the thread to be stored
  round->worker = std::thread([this, round, config = std::move(config)] {
    std::shared_ptr<RoundReport> report;
    std::string error;
    try {
      report = std::make_shared<RoundReport>(body_(config, round->start_ns));
      relative_to(report->result, round->start_ns);
    } catch (const std::exception& e) {
      error = e.what();
    }
    RoundState state;
    {
      std::lock_guard lock(mu_);
      round->report = report;
      if (!report) {
        round->error = error;
        if (round->state == RoundState::kRunning) round->state = RoundState::kFailed;
      } else if (round->state == RoundState::kRunning) {
        round->state = RoundState::kDone;
      }
      state = round->state;
      round->finished = true;
    }
    if (!error.empty()) {
      common::log_warn("round ", round->id, " failed: ", error);
    } else {
      common::log_info("round ", round->id, " ", protocol::to_string(state), ": sent ",
                       report->result.sent, ", completed ", report->result.completed);
    }
  });
  return {round->id, round->start_ns};
}

LoadService::Round& LoadService::find(const std::string& id, const std::string& owner) {
  if (!current_ || current_->id != id) {
    throw Refused("no round " + id + " here (finished rounds are freed by load.stop and when " +
                  "their lease lapses)");
  }
  if (current_->owner != owner) {
    throw Refused("round " + id + " belongs to owner " + current_->owner + ", not " + owner);
  }
  return *current_;
}

RoundStatus LoadService::status(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mu_);
  Round& r = find(id, owner);
  r.last_poll_ns = clock_();
  return {r.id, r.owner, r.state, r.error, r.lease_ns};
}

RoundResult LoadService::result(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mu_);
  Round& r = find(id, owner);
  r.last_poll_ns = clock_();
  if (!r.finished) throw Refused("round " + id + " is still running");
  if (!r.report) throw Refused("round " + id + " failed: " + r.error);
  return {r.id, r.state, r.start_ns, r.report};
}

protocol::LoadStopResult LoadService::stop(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mu_);
  Round& r = find(id, owner);
  r.stop = true;
  if (r.state == RoundState::kRunning) r.state = RoundState::kStopped;
  protocol::LoadStopResult out{r.id, r.state};
  common::log_info("round ", r.id, " stopped and freed by its owner (",
                   protocol::to_string(r.state), ")");
  retiring_.push_back(std::move(current_));
  current_.reset();
  return out;
}

std::vector<std::string> LoadService::expire(int64_t now_ns) {
  std::vector<std::string> lapsed;
  {
    std::lock_guard lock(mu_);
    if (current_ && now_ns - current_->last_poll_ns > current_->lease_ns) {
      Round& r = *current_;
      if (r.state == RoundState::kRunning) {
        r.stop = true;
        r.state = RoundState::kLapsed;
        r.last_poll_ns = now_ns;  // readable as lapsed for one more lease
        lapsed.push_back(r.id);
        common::log_warn("round ", r.id, " of owner ", r.owner, " lapsed: not polled for ",
                         seconds_text(r.lease_ns), "; stopped");
      } else {
        common::log_info("round ", r.id, " freed: not polled for ", seconds_text(r.lease_ns));
        retiring_.push_back(std::move(current_));
        current_.reset();
      }
    }
  }
  reap(false);
  return lapsed;
}

void LoadService::reap(bool wait) {
  std::vector<std::shared_ptr<Round>> done;
  {
    std::lock_guard lock(mu_);
    for (auto it = retiring_.begin(); it != retiring_.end();) {
      if (wait || (*it)->finished) {
        done.push_back(std::move(*it));
        it = retiring_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : done) {
    r->stop = true;
    if (r->worker.joinable()) r->worker.join();
  }
}

void LoadService::stop_all() {
  {
    std::lock_guard lock(mu_);
    if (current_) {
      current_->stop = true;
      if (current_->state == RoundState::kRunning) current_->state = RoundState::kStopped;
      retiring_.push_back(std::move(current_));
      current_.reset();
    }
  }
  reap(true);
}

bool LoadService::busy() const {
  std::lock_guard lock(mu_);
  return current_ && !current_->finished;
}

std::optional<std::pair<std::string, std::string>> LoadService::current() const {
  std::lock_guard lock(mu_);
  if (!current_) return std::nullopt;
  return std::make_pair(current_->id, current_->owner);
}

}  // namespace nabla::loadd
