#!/usr/bin/env bash
# The default (sequential) schedule against a fake service in virtual time:
# 8 links with known gradients and two interacting pairs as strong as the
# demo's under load, over 200 seeds instead of the suite's 30. Prints how
# many gradients fell within 5% of max(g, 1) of the undisturbed gradient and
# the CI coverage (target 0.90-0.99). Deterministic: the machine's load does
# not change the figures, only the time (about 13 minutes on 2 cores: the
# fixture grows with every seed, so the time grows faster than the count).
# Reproduce with:
#   bash bench/campaign/synthetic_seeds.sh build
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
seeds=${NABLA_BENCH_SEEDS:-200}
cmake --build "$build" --target campaign_run_test >/dev/null
NABLA_CAMPAIGN_SEEDS=$seeds "$build/tests/unit/campaign/campaign_run_test" \
  --gtest_filter='CampaignFakes.EightInteractingLinksOverManySeedsKeepGradientsAndCoverage' |
  grep -E "seeds:|PASSED|FAILED|Failure"
