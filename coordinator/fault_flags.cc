// The CLI11 glue of the fault flags; the parsers are common/fault_words.hh.
#include "nabla/coordinator/fault_flags.hh"

#include <CLI/CLI.hpp>

namespace nabla::coordinator {

void register_fault_flags(CLI::App& cmd, FaultFlags& f) {
  cmd.add_option("--delay", f.delay, "added delay, e.g. 20ms (the amplitude with a wave)");
  cmd.add_option("--wave", f.wave,
                 "shape the delay and every fault: square:PERIOD[,DUTY] | sine:PERIOD | "
                 "trace:FILE[,loop|once][,linear|step]");
  cmd.add_option("--square-period", f.square_period, "same as --wave square:PERIOD (with --duty)");
  cmd.add_option("--duty", f.duty, "square-wave duty cycle with --square-period")->default_val(0.5);
  cmd.add_option("--jitter", f.jitter, "jitter of this size around the delay, e.g. 1ms");
  cmd.add_option("--jitter-dist", f.jitter_distribution,
                 "jitter distribution: uniform|normal|pareto|paretonormal (uniform)");
  cmd.add_option("--jitter-correlation", f.jitter_correlation, "jitter correlation, e.g. 25%");
  cmd.add_option("--loss", f.loss, "loss: P% (Bernoulli) or gemodel:P[,R[,1-H[,1-K]]]");
  cmd.add_option("--reorder", f.reorder,
                 "send this share of packets at once, e.g. 10% (needs --delay)");
  cmd.add_option("--reorder-gap", f.reorder_gap, "only every Nth packet may be reordered (1)");
  cmd.add_option("--corrupt", f.corrupt, "flip one payload bit in this share, e.g. 0.1%");
  cmd.add_flag("--corrupt-fix-checksum", f.corrupt_fix_checksum,
               "recompute the checksum so the receiver accepts corrupted packets");
  cmd.add_option("--duplicate", f.duplicate, "send this share twice, e.g. 1%");
  cmd.add_option("--rate", f.rate, "rate limit, e.g. 10mbit (iproute2 units)");
  cmd.add_option("--burst", f.burst, "rate limit's bucket depth, e.g. 32kb (0)");
  cmd.add_flag("--partition", f.partition, "drop every packet (with a wave: while it is high)");
}

}  // namespace nabla::coordinator
