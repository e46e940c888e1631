#pragma once
// Runs stored in a real SQLite file for the report tests, made cheaply:
//  - a link-gradient campaign over two hosts run against the campaign's fakes
//    (tests/unit/campaign/fake_environment.hh) in virtual time: every phase,
//    injection, sample and gradient as `nabla run` stores them, in about a
//    second;
//  - a `nabla load` sweep written through the Store: two rate points, the
//    second refused (n/a) with its reasons, samples with service times;
//  - a campaign that failed after discovery: links, no phases, no gradients.
#include <cstdint>
#include <string>

namespace nabla::report::testing {

// Returns the run id. `seed` changes the campaign's samples and so its
// gradients; `simultaneous` measures both links in the same phases.
std::int64_t store_fake_campaign_run(const std::string& db_path, std::int64_t seed = 7,
                                     bool simultaneous = false);
std::int64_t store_load_sweep_run(const std::string& db_path);
std::int64_t store_failed_campaign_run(const std::string& db_path);

// The truth the fake service implements, as the campaign file's [truth]
// gives it: link "tcp web -> app:9002", type "/a".
inline constexpr double kTruthWebToAppA = 1.5;

}  // namespace nabla::report::testing
