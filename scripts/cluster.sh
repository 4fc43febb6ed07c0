#!/usr/bin/env bash
# The production layout on one machine, every piece on loopback:
# PostgreSQL (Debian's), its schema set up by the Temporal server's own SQL
# tool (corl server sql-tool, the server version corl pins), Temporal's
# frontend, history (4 shards), matching and worker services as separate
# processes (corl server start), the Web UI, versitygw as the S3 store, and
# one CPU and two GPU-pool corl workers.
#
#   scripts/cluster.sh start [DIR]    start it all (DIR default .cluster)
#   scripts/cluster.sh stop [DIR]     stop it all (workers get SIGTERM first)
#   scripts/cluster.sh status [DIR]   which pieces run
#   scripts/cluster.sh restart-db [DIR]  restart PostgreSQL as after a crash
#                                        (immediate shutdown, then start)
#
# Each piece's log is DIR/logs/<piece>.log; DIR/env.sh exports what corl
# needs to use the cluster (source it, then corl run -f spec.yaml --wait).
# The Temporal services read the same environment variables as in
# docker-compose.yml (the server's embedded config template), between the
# "temporal-env" markers below; TestClusterAgreesWithCompose checks they
# agree key by key. Ports: PG_PORT (5433), FRONTEND_GRPC_PORT (7233) and
# the other services' (7234-7239, 6933-6939), UI_PORT (8233), S3_PORT
# (7070); set any of them to move it.
#
# Security of a shared cluster, on loopback:
# - The store has an administrator (S3_ADMIN_KEY, S3_ADMIN_SECRET: corl-admin,
#   corl-admin-secret) and the workers' account (S3_ACCESS_KEY, S3_SECRET_KEY:
#   corl, corlsecret) in versitygw's IAM; the bucket's policy grants the
#   workers' account and no one else (corl server store-setup checks that an
#   anonymous request is refused).
# - TLS=1 turns on mutual TLS between the services and for every client of
#   the frontend (workers, commands, the Web UI), with certificates from a
#   test CA written to DIR/tls (corl server certs); DIR/env.sh then carries
#   corl's TLS settings.
# - NAMESPACES (space-separated) are registered, and NAMESPACE (default:
#   default), which the workers serve. A team's workers and runs live in its
#   own namespace.
# Run as root, the script runs PostgreSQL as the postgres user, who must be
# able to reach DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-start}
dir=$(mkdir -p "${2:-.cluster}" && cd "${2:-.cluster}" && pwd)
mkdir -p "$dir/logs" "$dir/pids" "$dir/bin"

PG_PORT=${PG_PORT:-5433}
UI_PORT=${UI_PORT:-8233}
S3_PORT=${S3_PORT:-7070}
# Prometheus /metrics, one port each from METRICS_PORT: frontend, history,
# matching, worker, cpu-worker, gpu-worker-1, gpu-worker-2.
METRICS_PORT=${METRICS_PORT:-9090}
S3_ACCESS_KEY=${S3_ACCESS_KEY:-corl}
S3_SECRET_KEY=${S3_SECRET_KEY:-corlsecret}
S3_ADMIN_KEY=${S3_ADMIN_KEY:-corl-admin}
S3_ADMIN_SECRET=${S3_ADMIN_SECRET:-corl-admin-secret}
NAMESPACE=${NAMESPACE:-default}
NAMESPACES=${NAMESPACES:-$NAMESPACE}
case " $NAMESPACES " in *" $NAMESPACE "*) ;; *) NAMESPACES="$NAMESPACES $NAMESPACE" ;; esac
TLS=${TLS:-0}
# temporal-env begin
export DB=postgres12
export POSTGRES_SEEDS=127.0.0.1
export DB_PORT=$PG_PORT
export POSTGRES_USER=temporal
export POSTGRES_PWD=temporal
export DBNAME=temporal
export VISIBILITY_DBNAME=temporal_visibility
export NUM_HISTORY_SHARDS=4
export BIND_ON_IP=127.0.0.1
export TEMPORAL_BROADCAST_ADDRESS=127.0.0.1
export LOG_LEVEL=warn
export DYNAMIC_CONFIG_FILE_PATH=$PWD/scripts/cluster-dynamicconfig.yaml
export FRONTEND_GRPC_PORT=${FRONTEND_GRPC_PORT:-7233}
export HISTORY_GRPC_PORT=${HISTORY_GRPC_PORT:-7234}
export MATCHING_GRPC_PORT=${MATCHING_GRPC_PORT:-7235}
export WORKER_GRPC_PORT=${WORKER_GRPC_PORT:-7239}
export FRONTEND_MEMBERSHIP_PORT=${FRONTEND_MEMBERSHIP_PORT:-6933}
export HISTORY_MEMBERSHIP_PORT=${HISTORY_MEMBERSHIP_PORT:-6934}
export MATCHING_MEMBERSHIP_PORT=${MATCHING_MEMBERSHIP_PORT:-6935}
export WORKER_MEMBERSHIP_PORT=${WORKER_MEMBERSHIP_PORT:-6939}
export FRONTEND_HTTP_PORT=${FRONTEND_HTTP_PORT:-7243}
export PROMETHEUS_ENDPOINT=127.0.0.1:$METRICS_PORT
# temporal-env end
for v in FRONTEND_MEMBERSHIP_PORT HISTORY_MEMBERSHIP_PORT MATCHING_MEMBERSHIP_PORT WORKER_MEMBERSHIP_PORT; do
  if [ "${!v}" -gt 32767 ]; then
    echo "cluster: $v=${!v}: the server's PostgreSQL schema keeps membership ports in a smallint; choose one below 32768" >&2
    exit 2
  fi
done
# corl-env begin
corl_env=(
  CORL_TEMPORAL_ADDRESS=127.0.0.1:$FRONTEND_GRPC_PORT
  CORL_TEMPORAL_NAMESPACE=$NAMESPACE
  CORL_STORE_KIND=s3
  CORL_STORE_S3_ENDPOINT=http://127.0.0.1:$S3_PORT
  CORL_STORE_S3_BUCKET=corl
  CORL_STORE_S3_PATH_STYLE=true
  AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
  AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
  AWS_REGION=us-east-1
)
# corl-env end
if [ "$TLS" = 1 ]; then
  # The server's config template: internode TLS with the services'
  # certificate, the frontend's own, and client certificates required.
  export TEMPORAL_TLS_SERVER_CA_CERT=$dir/tls/ca.pem
  export TEMPORAL_TLS_SERVER_CERT=$dir/tls/server.pem
  export TEMPORAL_TLS_SERVER_KEY=$dir/tls/server-key.pem
  export TEMPORAL_TLS_FRONTEND_CERT=$dir/tls/server.pem
  export TEMPORAL_TLS_FRONTEND_KEY=$dir/tls/server-key.pem
  export TEMPORAL_TLS_CLIENT1_CA_CERT=$dir/tls/ca.pem
  export TEMPORAL_TLS_CLIENT2_CA_CERT=$dir/tls/ca.pem
  export TEMPORAL_TLS_REQUIRE_CLIENT_AUTH=true
  export TEMPORAL_TLS_INTERNODE_SERVER_NAME=localhost # a name the certificate has
  export TEMPORAL_TLS_FRONTEND_SERVER_NAME=localhost
  corl_env+=(
    CORL_TEMPORAL_TLS_ENABLED=true
    CORL_TEMPORAL_TLS_CA_FILE=$dir/tls/ca.pem
    CORL_TEMPORAL_TLS_CERT_FILE=$dir/tls/client.pem
    CORL_TEMPORAL_TLS_KEY_FILE=$dir/tls/client-key.pem
  )
fi

corl=${CORL_BIN:-$dir/bin/corl}
pieces=(history matching frontend worker ui s3 cpu-worker gpu-worker-1 gpu-worker-2)

say() { echo "cluster: $*" >&2; }
alive() { [ -f "$dir/pids/$1.pid" ] && kill -0 "$(cat "$dir/pids/$1.pid")" 2>/dev/null; }

# as_pg runs a PostgreSQL program as the postgres user when we are root
# (PostgreSQL refuses to run as root), else as ourselves.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pg_bin() {
  local b
  b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$b" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      say "installing PostgreSQL (apt-get install postgresql)"
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql >"$dir/logs/apt.log" 2>&1
      b=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    else
      say "PostgreSQL is not installed: apt-get install postgresql (as root)"; exit 1
    fi
  fi
  echo "$b"
}

# wait_port waits for a TCP port on loopback to accept connections.
wait_port() {
  for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  say "nothing listens on 127.0.0.1:$1 after 60 s (see $dir/logs/$2.log)"; exit 1
}

# run_bg starts a piece in the background with its log and pid file.
run_bg() {
  local name=$1; shift
  if alive "$name"; then say "$name already runs"; return; fi
  "$@" >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name.pid"
}

start() {
  if [ -z "${CORL_BIN:-}" ]; then
    say "building corl"
    go build -o "$corl" ./cmd/corl
  fi
  versitygw=${VERSITYGW:-$(command -v versitygw || true)}
  if [ -z "$versitygw" ]; then
    say "installing versitygw v1.8.0"
    GOBIN="$dir/bin" go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
    versitygw=$dir/bin/versitygw
  fi

  if [ "$TLS" = 1 ] && [ ! -f "$dir/tls/client.pem" ]; then
    "$corl" server certs "$dir/tls" 2>>"$dir/logs/setup.log"
  fi
  local pgb; pgb=$(pg_bin)
  if [ ! -f "$dir/pg/PG_VERSION" ]; then
    say "initdb $dir/pg"
    mkdir -p "$dir/pg"
    [ "$(id -u)" = 0 ] && chown postgres "$dir/pg" "$dir/logs"
    as_pg "$pgb/initdb" -D "$dir/pg" -U "$POSTGRES_USER" --auth=trust >"$dir/logs/initdb.log" 2>&1
  fi
  [ "$(id -u)" = 0 ] && chown postgres "$dir/logs"
  if ! as_pg "$pgb/pg_ctl" -D "$dir/pg" status >/dev/null 2>&1; then
    say "PostgreSQL on 127.0.0.1:$PG_PORT"
    as_pg "$pgb/pg_ctl" -D "$dir/pg" -l "$dir/logs/postgres.log" -w \
      -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $dir/pg" start >/dev/null
  fi

  sqltool=("$corl" server sql-tool --plugin postgres12 --ep 127.0.0.1 -p "$PG_PORT" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD")
  for db in "$DBNAME:temporal" "$VISIBILITY_DBNAME:visibility"; do
    name=${db%%:*} schema=${db##*:}
    if [ ! -f "$dir/pg/.schema-$name" ]; then
      say "schema of $name (postgresql/v12/$schema)"
      {
        "${sqltool[@]}" --db "$name" create-database
        "${sqltool[@]}" --db "$name" setup-schema -v 0.0
      } >>"$dir/logs/schema.log" 2>&1
      touch "$dir/pg/.schema-$name"
    fi
    # Idempotent: brings a database made by an older pin up to this one.
    "${sqltool[@]}" --db "$name" update-schema --schema-name "postgresql/v12/$schema" >>"$dir/logs/schema.log" 2>&1
  done

  # History first: on a new database every service writes the cluster's
  # metadata at start, and two writing at once fail one of them ("version
  # mismatch"). Once history listens, the metadata is there. Metrics ports:
  # frontend, history, matching, worker from METRICS_PORT.
  start_service() {
    local i
    case $1 in frontend) i=0 ;; history) i=1 ;; matching) i=2 ;; worker) i=3 ;; esac
    run_bg "$1" env PROMETHEUS_ENDPOINT="127.0.0.1:$((METRICS_PORT + i))" "$corl" server start --services "$1"
  }
  start_service history
  wait_port "$HISTORY_GRPC_PORT" history
  for s in frontend matching worker; do start_service "$s"; done
  wait_port "$FRONTEND_GRPC_PORT" frontend
  for ns in $NAMESPACES; do
    env "${corl_env[@]}" "$corl" server setup --address "127.0.0.1:$FRONTEND_GRPC_PORT" --namespace "$ns" >>"$dir/logs/setup.log" 2>&1 \
      || { say "namespace $ns: setup failed (see $dir/logs/setup.log)"; exit 1; }
  done
  run_bg ui env "${corl_env[@]}" "$corl" server ui --address "127.0.0.1:$FRONTEND_GRPC_PORT" --port "$UI_PORT" --namespace "$NAMESPACE"

  # versitygw's IAM: the workers' account; the administrator is its root.
  mkdir -p "$dir/s3" "$dir/s3-iam"
  printf '{"accessAccounts":{"%s":{"access":"%s","secret":"%s","role":"user","userID":0,"groupID":0,"projectID":0}}}\n' \
    "$S3_ACCESS_KEY" "$S3_ACCESS_KEY" "$S3_SECRET_KEY" >"$dir/s3-iam/users.json"
  chmod 600 "$dir/s3-iam/users.json"
  run_bg s3 "$versitygw" --port "127.0.0.1:$S3_PORT" --access "$S3_ADMIN_KEY" --secret "$S3_ADMIN_SECRET" \
    --iam-dir "$dir/s3-iam" posix "$dir/s3"
  wait_port "$S3_PORT" s3
  AWS_ACCESS_KEY_ID=$S3_ADMIN_KEY AWS_SECRET_ACCESS_KEY=$S3_ADMIN_SECRET AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true \
    "$corl" server store-setup --endpoint "http://127.0.0.1:$S3_PORT" --bucket corl --grant "$S3_ACCESS_KEY" >>"$dir/logs/setup.log" 2>&1 \
    || { say "store setup failed (see $dir/logs/setup.log)"; exit 1; }

  run_bg cpu-worker env "${corl_env[@]}" AWS_EC2_METADATA_DISABLED=true "$corl" worker --pool cpu \
    --metrics "127.0.0.1:$((METRICS_PORT + 4))"
  for i in 1 2; do
    run_bg "gpu-worker-$i" env "${corl_env[@]}" AWS_EC2_METADATA_DISABLED=true \
      "$corl" worker --pool gpu --queue-id "gpu-worker-$i" --backend "${CORL_BACKEND:-cpu}" \
      --metrics "127.0.0.1:$((METRICS_PORT + 4 + i))"
  done

  # Ready once placement sees both GPU workers.
  env "${corl_env[@]}" "$corl" server setup --address "127.0.0.1:$FRONTEND_GRPC_PORT" --namespace "$NAMESPACE" --gpu-workers 2 >>"$dir/logs/setup.log" 2>&1 \
    || { say "the GPU workers are not in the pool's listing (see $dir/logs/setup.log and gpu-worker-*.log)"; exit 1; }
  for p in "${pieces[@]}"; do
    alive "$p" || { say "$p exited after starting (see $dir/logs/$p.log)"; exit 1; }
  done
  { printf 'export %s\n' "${corl_env[@]}"; echo "export AWS_EC2_METADATA_DISABLED=true"; } >"$dir/env.sh"
  local sec="store bucket granted to $S3_ACCESS_KEY only"
  [ "$TLS" = 1 ] && sec="$sec, mutual TLS (test CA in $dir/tls)"
  say "running: namespaces $NAMESPACES (workers serve $NAMESPACE), $sec"
  say "running: frontend 127.0.0.1:$FRONTEND_GRPC_PORT, web UI http://127.0.0.1:$UI_PORT, store http://127.0.0.1:$S3_PORT (bucket corl), metrics 127.0.0.1:$METRICS_PORT-$((METRICS_PORT + 6)), logs $dir/logs"
  say "use it: source $dir/env.sh; corl run -f examples/local.yaml --wait"
}

stop() {
  for ((i = ${#pieces[@]} - 1; i >= 0; i--)); do
    p=${pieces[$i]}
    if alive "$p"; then
      kill -TERM "$(cat "$dir/pids/$p.pid")" 2>/dev/null || true
      for _ in $(seq 1 100); do alive "$p" || break; sleep 0.1; done
      alive "$p" && kill -KILL "$(cat "$dir/pids/$p.pid")" 2>/dev/null || true
    fi
    rm -f "$dir/pids/$p.pid"
  done
  if [ -f "$dir/pg/PG_VERSION" ]; then
    as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
  fi
  say "stopped"
}

status() {
  for p in "${pieces[@]}"; do
    if alive "$p"; then echo "$p: running (pid $(cat "$dir/pids/$p.pid"))"; else echo "$p: stopped"; fi
  done
  if as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg" status >/dev/null 2>&1; then echo "postgresql: running"; else echo "postgresql: stopped"; fi
}

restart_db() {
  as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg" -l "$dir/logs/postgres.log" -m immediate -w restart >/dev/null
  say "PostgreSQL restarted"
}

case $action in
  start) start ;;
  stop) stop ;;
  status) status ;;
  restart-db) restart_db ;;
  *) echo "usage: $0 start|stop|status|restart-db [DIR]" >&2; exit 2 ;;
esac
