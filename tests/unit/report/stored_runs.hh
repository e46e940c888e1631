#pragma once
// Runs stored in a real SQLite file for the report tests, made cheaply:
//  - a link-gradient campaign over two hosts run against the campaign's fakes
//    (tests/unit/campaign/fake_environment.hh) in virtual time: every phase,
//    injection, sample and gradient as `nabla run` stores them, in about a
//    second;
//  - a `nabla load` sweep written through the Store: two rate points, the
//    second refused (n/a) with its reasons, samples with service times, the
//    controller's checks of each point;
//  - a campaign that failed after discovery: links, no phases, no gradients;
//  - campaign results written through the Store without phases (nodes,
//    links, gradients with CIs, a [truth] in the run's configuration): one
//    shaped like `nabla demo`'s (4 hosts, 8 links, 4 types, some truth
//    checks failing) and a wider one (5 hosts, 16 links, 3 types), for the
//    link graph and the page's first section.
#include <cstdint>
#include <string>
#include <vector>

namespace nabla::report::testing {

// Returns the run id. `seed` changes the campaign's samples and so its
// gradients; `simultaneous` measures both links in the same phases.
std::int64_t store_fake_campaign_run(const std::string& db_path, std::int64_t seed = 7,
                                     bool simultaneous = false);
// `checks`: with the controller's checks of each rate point (load_checks);
// without, the run reads as one stored before schema version 7.
std::int64_t store_load_sweep_run(const std::string& db_path, bool checks = true);
std::int64_t store_failed_campaign_run(const std::string& db_path);
// A run with one fault experiment "db-slow" whose SLO fails in its fault
// window: p99 and errors per window (baseline, fault, recovery).
std::int64_t store_experiment_run(const std::string& db_path);

// One one-way link of a stored topology; port 0 is an ephemeral client port.
struct TopologyLink {
  std::string src_host;
  int src_port = 0;
  std::string dst_host;
  int dst_port = 0;
};

// A stored campaign result over `links`: per link and type a gradient with a
// CI of +-0.05 and the truth beside it; `truth_misses` of the gradients (the
// first ones, in link then type order) miss their truth by 0.5.
struct TopologyRun {
  std::vector<std::string> hosts;
  std::vector<TopologyLink> links;
  std::vector<std::string> types;
  std::size_t truth_misses = 0;
  // The first `step_disagreements` gradients get a step estimate whose CI
  // is disjoint from theirs, the others one that agrees. With `sweep`, the
  // first gradient gets an amplitude sweep that breaks at 8 ms (2, 4 ms
  // linear, 8 ms 50% higher).
  std::size_t step_disagreements = 0;
  bool steps = false;
  bool sweep = false;
  // The first link's active phase was measured twice (the first attempt too
  // noisy): two active phases, its gradients read from the second.
  bool repeated_phase = false;
};
std::int64_t store_topology_run(const std::string& db_path, const TopologyRun& topology);

// `nabla demo`'s shape: client, web:8080, app:8081, db:8082 and db:8083,
// both directions of each connection, /auth /bid /browse /view; 9 of its 32
// truth checks fail.
TopologyRun demo_shaped_topology();
// 5 hosts, 16 one-way links (8 connections), 3 types; every check passes.
TopologyRun wide_topology();

// The truth the fake service implements, as the campaign file's [truth]
// gives it: link "tcp web -> app:9002", type "/a".
inline constexpr double kTruthWebToAppA = 1.5;

}  // namespace nabla::report::testing
