# Shared by the bench/loadgen scripts (sourced, not run by bench/run.sh):
# a private work folder cleaned on exit, free loopback ports, waiting for a
# listener, and an nginx that answers "ok" on 127.0.0.1 with its own prefix
# directory.

# bench_work NAME: $work, a new folder under $TMPDIR, and $pids, the servers
# the script starts; on exit each is stopped by its pid and the folder is
# removed. A script with more to undo defines bench_cleanup_extra first.
bench_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1-XXXXXX")
  pids=()
  trap bench_cleanup EXIT
}

bench_cleanup() {
  if declare -F bench_cleanup_extra >/dev/null; then bench_cleanup_extra; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}

# json FILE EXPR: evaluates a python expression over the parsed JSON `j`.
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something listens on 127.0.0.1:$1 (at most ~5 s).
wait_listen() {
  for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.1)" "$1" \
      2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on port $1" >&2; return 1
}

# nginx_conf DIR PORT: writes DIR/nginx.conf for one worker, no access log,
# keep-alive without limit, answering 200 "ok" on 127.0.0.1:PORT.
nginx_conf() {
  mkdir -p "$1/logs"
  cat > "$1/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $1/nginx.pid;
error_log $1/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
  server {
    listen 127.0.0.1:$2;
    location / { return 200 "ok\n"; }
  }
}
CONF
}
