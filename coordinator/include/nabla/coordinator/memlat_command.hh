#pragma once
// `nabla memlat`: application memory latency at run time from core counters
// (memlat/estimator.hh), their recording and replay, and the pointer-chase
// ground truth (`--probe`). docs/memlat.md has the method, docs/cli.md the
// flags. Exit 3 when the counters cannot be had, with one line saying why.
namespace CLI {
class App;
}

namespace nabla::coordinator {

void register_memlat_command(CLI::App& app);

}  // namespace nabla::coordinator
