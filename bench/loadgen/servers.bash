# Shared by the bench/loadgen scripts (sourced, not run by bench/run.sh):
# free loopback ports, waiting for a listener, and an nginx that answers
# "ok" on 127.0.0.1 with its own prefix directory.

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
