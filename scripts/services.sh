#!/usr/bin/env bash
# Throwaway PostgreSQL 15 and Redis 7 on loopback for the tests. Source it, then
#   aw_services_start   # exports AWOOOP_TEST_PG_HOST/PORT, AWOOOP_TEST_REDIS_URL,
#                       # AWOOOP_TEST_PG_CA (PostgreSQL speaks TLS with a
#                       # certificate for 127.0.0.1 this CA signed) and
#                       # AWOOOP_TEST_PG_PW_USER/_PASSWORD (a role that must
#                       # log in with its password over TLS: scram-sha-256)
#   aw_services_stop    # always call it (trap) - stops both and removes their dirs
# initdb/pg_ctl refuse to run as root, so as root they run as the postgres user
# in a temp dir it owns. Ports are free ones picked at random. AW_PG_OPTS:
# more server options (a bench's "-c track_commit_timestamp=on").

AW_PGBIN=${AW_PGBIN:-/usr/lib/postgresql/15/bin}

aw__free_port() {
  local p i
  for i in $(seq 1 100); do
    p=$((20000 + RANDOM % 12000))   # below the ephemeral range (32768+)
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "no free port found" >&2; return 1
}

aw__as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

aw_services_start() {
  AW_SVC_DIR=$(mktemp -d /tmp/awooop-svc.XXXXXX)
  chmod 755 "$AW_SVC_DIR"
  mkdir -p "$AW_SVC_DIR/pg" "$AW_SVC_DIR/redis"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$AW_SVC_DIR/pg"

  AWOOOP_TEST_PG_PORT=$(aw__free_port)
  aw__as_pg "$AW_PGBIN/initdb" -D "$AW_SVC_DIR/pg/data" -U postgres -A trust \
    -E UTF8 --locale=C.UTF-8 --no-sync >"$AW_SVC_DIR/initdb.log" 2>&1 \
    || { cat "$AW_SVC_DIR/initdb.log" >&2; return 1; }
  # TLS: a CA and a server certificate for 127.0.0.1 (sslmode=verify-full)
  local tls=$AW_SVC_DIR/pg/tls
  mkdir -p "$tls"
  ( cd "$tls" && openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=aw-test-pg-ca \
      -keyout ca.key -out ca.pem \
    && openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout server.key -out server.csr \
    && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >san.ext \
    && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
      -extfile san.ext -out server.pem ) >/dev/null 2>&1 || { echo "openssl failed" >&2; return 1; }
  chmod 600 "$tls/server.key"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$tls"
  # a role that must use its password, over TLS; everyone else: trust
  AWOOOP_TEST_PG_PW_USER=awooop_pw
  AWOOOP_TEST_PG_PASSWORD="canary-pg-$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  { echo "hostssl all $AWOOOP_TEST_PG_PW_USER 127.0.0.1/32 scram-sha-256"
    echo "host all $AWOOOP_TEST_PG_PW_USER 127.0.0.1/32 reject"
    cat "$AW_SVC_DIR/pg/data/pg_hba.conf"; } >"$AW_SVC_DIR/pg/hba.tmp"
  mv "$AW_SVC_DIR/pg/hba.tmp" "$AW_SVC_DIR/pg/data/pg_hba.conf"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$AW_SVC_DIR/pg/data/pg_hba.conf"
  aw__as_pg "$AW_PGBIN/pg_ctl" -D "$AW_SVC_DIR/pg/data" -l "$AW_SVC_DIR/pg/log" -w -t 60 \
    -o "-p $AWOOOP_TEST_PG_PORT -k $AW_SVC_DIR/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c ssl=on -c ssl_cert_file=$tls/server.pem -c ssl_key_file=$tls/server.key ${AW_PG_OPTS:-}" \
    start >/dev/null || { cat "$AW_SVC_DIR/pg/log" >&2; return 1; }
  psql -q -h 127.0.0.1 -p "$AWOOOP_TEST_PG_PORT" -U postgres -d postgres \
    -c "CREATE ROLE $AWOOOP_TEST_PG_PW_USER LOGIN PASSWORD '$AWOOOP_TEST_PG_PASSWORD'" >/dev/null \
    || return 1

  AW_REDIS_PORT=$(aw__free_port)
  redis-server --port "$AW_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --dir "$AW_SVC_DIR/redis" --pidfile "$AW_SVC_DIR/redis/redis.pid" \
    --logfile "$AW_SVC_DIR/redis/log" || return 1
  local i
  for i in $(seq 1 50); do
    redis-cli -p "$AW_REDIS_PORT" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  export AWOOOP_TEST_PG_HOST=127.0.0.1 AWOOOP_TEST_PG_PORT AWOOOP_TEST_PG_PW_USER AWOOOP_TEST_PG_PASSWORD
  export AWOOOP_TEST_PG_CA=$tls/ca.pem
  export AWOOOP_TEST_REDIS_URL="redis://127.0.0.1:$AW_REDIS_PORT"
  echo "services: postgres $("$AW_PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$AWOOOP_TEST_PG_PORT," \
       "redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$AW_REDIS_PORT" >&2
}

aw_services_stop() {
  [ -n "${AW_SVC_DIR:-}" ] || return 0
  if [ -f "$AW_SVC_DIR/pg/data/postmaster.pid" ]; then
    aw__as_pg "$AW_PGBIN/pg_ctl" -D "$AW_SVC_DIR/pg/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ -f "$AW_SVC_DIR/redis/redis.pid" ]; then
    local pid i
    pid=$(cat "$AW_SVC_DIR/redis/redis.pid" 2>/dev/null || true)
    if [ -n "$pid" ]; then
      kill "$pid" 2>/dev/null || true
      for i in $(seq 1 50); do   # wait until it has exited: it may still write files
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$AW_SVC_DIR" 2>/dev/null || rm -rf "$AW_SVC_DIR" 2>/dev/null || true
  AW_SVC_DIR=
  return 0
}
