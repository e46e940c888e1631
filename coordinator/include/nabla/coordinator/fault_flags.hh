#pragma once
// The delay, fault and waveform flags of `nabla inject`. The vocabulary and
// its parsers live in common/ (nabla/common/fault_words.hh), so a campaign's
// [[experiment]] tables share them; this header adds the CLI11 registration
// and keeps the coordinator's names for them.
#include "nabla/common/fault_words.hh"

namespace CLI {
class App;
}

namespace nabla::coordinator {

using common::build_fault_request;
using common::FaultFlags;
using common::FaultRequest;
using common::FileReader;
using common::parse_loss_flag;
using common::parse_rate_bps;
using common::parse_size_bytes;
using common::parse_trace_csv;
using common::parse_wave_flag;
using common::read_trace_file;
using common::WaveFlag;

void register_fault_flags(CLI::App& command, FaultFlags& flags);

}  // namespace nabla::coordinator
