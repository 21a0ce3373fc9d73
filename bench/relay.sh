#!/usr/bin/env bash
# bench/relay.sh DIR PORT: starts nginx (Debian's nginx-light, installed by
# scripts/deps.sh --bench) as a bare reverse proxy in front of
# 127.0.0.1:PORT - HTTP/1.1 keep-alive to the upstream, no buffering, no
# access log, 2 worker processes - and prints the port it listens on. Its
# files and pid (DIR/nginx.pid, the master: kill it to stop) are in DIR.
# The benches' "relay" row: what relaying alone costs on this machine.
set -euo pipefail
DIR=$1 UP=$2
mkdir -p "$DIR"
P=$((UP + 2000)); while ss -ltn | grep -q ":$P "; do P=$((P + 1)); done
cat >"$DIR/nginx.conf" <<CONF
worker_processes 2;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $DIR/body; proxy_temp_path $DIR/proxy;
  fastcgi_temp_path $DIR/fastcgi; uwsgi_temp_path $DIR/uwsgi; scgi_temp_path $DIR/scgi;
  upstream up { server 127.0.0.1:$UP; keepalive 128; }
  server {
    listen 127.0.0.1:$P;
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
CONF
/usr/sbin/nginx -c "$DIR/nginx.conf" -e "$DIR/error.log"
for _ in $(seq 1 50); do [ -s "$DIR/nginx.pid" ] && ss -ltn | grep -q "127.0.0.1:$P " && break; sleep 0.1; done
echo "$P"
