#!/usr/bin/env bash
# The HTTP/2 client session's cost per request, exactly: instructions
# (callgrind) spent inside loadgen's H2Session for each request it sends
# and each answer it reads, against an in-memory server session answering
# as nginx 1.22 does (every response's headers as literals, decoded anew),
# and the ratio over the server session's instructions for the same
# requests in the same run (its mirror image of the work: decode a request,
# encode an answer). No sockets, no TLS, no timing: the same figure on any
# machine, quiet or busy (nabla_h2_client_cost.cc). About 30 seconds.
#   bash bench/loadgen/h2_client_cost.sh build
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
command -v valgrind >/dev/null || { echo "h2 client cost bench: valgrind not installed (scripts/install-deps.sh)" >&2; exit 1; }
cmake --build "$build" --target nabla_h2_client_cost >/dev/null
driver=$build/bench/loadgen/nabla_h2_client_cost
rounds=${NABLA_BENCH_ROUNDS:-2000}
streams=${NABLA_BENCH_STREAMS:-8}
work=$(mktemp -d "${TMPDIR:-/tmp}/nabla-h2-cost-XXXXXX")
trap 'rm -rf "$work"' EXIT
# instructions SIDE PATTERN: Ir collected inside functions matching PATTERN
instructions() {
  valgrind --tool=callgrind --callgrind-out-file="$work/$1.cg" "--toggle-collect=$2" \
    "$driver" "$rounds" "$streams" >"$work/$1.out" 2>"$work/$1.err" ||
    { echo "h2 client cost bench: the driver failed:" >&2; cat "$work/$1.out" "$work/$1.err" >&2; exit 1; }
  sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$work/$1.err"
}
client=$(instructions client 'nabla::loadgen::detail::H2Session::*')
server=$(instructions server '*NginxLikeServer::*')
requests=$((rounds * streams))
echo "HTTP/2 client session cost, $rounds rounds of $streams streams ($requests requests), instructions (callgrind)"
echo "    client session: $((client / requests)) per request"
echo "    server session: $((server / requests)) per request (nghttp2 answering as nginx does)"
echo "    client / server: $(python3 -c "print('%.2f' % ($client / $server))")"
echo "command: bash bench/loadgen/h2_client_cost.sh build"
