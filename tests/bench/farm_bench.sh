#!/usr/bin/env bash
# A simulated board farm (issue 32): torq-coordinator discovers
# efficientnet_b1 in bf16 (--auto-convert-bf16, --target astra) on K boards
# with C compile lanes in all: K board workers (--backend toolchain with the
# stand-in, --board over ssh, --capacity C/K), each driving its own sshd on
# 127.0.0.1 that plays a board with its own /tmp (a private mount
# namespace, so each has its own board lock /tmp/torq_board_test.lock).
# The stand-in takes the toolchain file's stand_in_latency: COMPILE_S per
# compile (on the worker's host, in a lane) and RUN_S per run (on the
# board, one at a time under its lock), on top of the stand-in's own work.
#
# Per (K, C) it prints
#   farm: boards K, lanes C, jobs N, wall S s, efficiency E, board utilization U, speedup over sequential X
# where S is the coordinator's job phase (first job sent to last result
# committed), the ideal is max(N x COMPILE_S / C, N x RUN_S / K),
# efficiency = ideal / S, board utilization = the boards' run time (the
# results' runtime_ms, each the board's own `time`) / (K x S), and the
# sequential figure is N x (COMPILE_S + RUN_S), the latencies alone one
# step after the other as the seed tool runs them (a lower bound: it leaves
# out the steps' own work and the ssh round trips).
# Goal at K = 8, C = 64: efficiency >= 0.9.
# Then a bound line: the CPU-s the machine spent during the run (the
# coordinator's start to its exit), per job, and the efficiency its cores
# allow (CPU-s / cores is a floor on the wall time when every process of
# the farm shares them).
# And that CPU split: the board side (each board's sshd with every process
# it ran and reaped: shells, the run step, staging), which a real farm runs
# on the boards, and the host side (the rest), with the efficiency the host
# side alone would allow on this machine's cores.
# Needs root (unshare --mount), sshd (openssh-server), the shared models.
# About 10 minutes on 2 cores with the defaults.
# Usage: tests/bench/farm_bench.sh [BUILD_DIR] [COMPILE_S=2] [RUN_S=0.05] [K:C ...=1:8 4:32 8:64]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"  # absolute: the boards' sshd configs name files in it
compile_s="${2:-2}"
run_s="${3:-0.05}"
shift $(($# < 3 ? $# : 3))
configs=(1:8 4:32 8:64)
[ $# -eq 0 ] || configs=("$@")
model="$root/../shared/models/efficientnet_b1/model.onnx"
coord="$build/bin/torq-coordinator"
worker="$build/bin/torq-worker"
for b in "$coord" "$worker" "$build/bin/torq-sim"; do [ -x "$b" ] || { echo "bench: $b not built"; exit 2; }; done
[ -f "$model" ] || { echo "bench: $model not found"; exit 2; }
[ "$(id -u)" = 0 ] && command -v unshare >/dev/null ||
  { echo "bench: needs root and unshare (each simulated board gets its own /tmp)"; exit 2; }
[ -x /usr/sbin/sshd ] || { echo "bench: needs /usr/sbin/sshd (openssh-server)"; exit 2; }
. "$root/tests/bench/lib.sh"  # free_port, now
# Not under /tmp: each board's sshd sees its own /tmp.
case "$build/" in /tmp/*) echo "bench: BUILD_DIR must not be under /tmp (each board's sshd has its own /tmp)"; exit 2 ;; esac
for kc in "${configs[@]}"; do
  [[ $kc =~ ^[1-9][0-9]*:[1-9][0-9]*$ ]] || { echo "bench: '$kc' is not K:C (boards:lanes, both positive)"; exit 2; }
done
tmp=$(mktemp -d -p "$build" farm-bench.XXXXXX)
pids=()
cpid=""
cleanup() {
  [ -n "$cpid" ] && kill "$cpid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$tmp/client" </dev/null
cp "$tmp/client.pub" "$tmp/authorized_keys"
sed -e '/^name:/a stand_in_latency: {compile_s: '"$compile_s"', run_s: '"$run_s"'}' \
  -e 's/^name: standin/name: standin-farm/' "$root/configs/toolchains/standin.yaml" >"$tmp/farm.yaml"

# board N: an sshd on a free port with a private /tmp; sets board_port and
# board_pid
# (not run in $(...): sshd would hold the substitution's pipe open).
board() {
  local n=$1 port
  port=$(free_port)
  mkdir -p "$tmp/board$n/tmp"
  chmod 1777 "$tmp/board$n/tmp"
  ssh-keygen -q -t ed25519 -N '' -f "$tmp/board$n/host" </dev/null
  cat >"$tmp/board$n/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $tmp/board$n/host
AuthorizedKeysFile $tmp/authorized_keys
PidFile $tmp/board$n/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
MaxSessions 64
MaxStartups 128
LogLevel ERROR
SetEnv SHLVL=1
Subsystem sftp internal-sftp
EOF
  unshare --mount --propagation private sh -c \
    "mount --bind '$tmp/board$n/tmp' /tmp && exec /usr/sbin/sshd -D -e -f '$tmp/board$n/sshd_config'" \
    >/dev/null 2>"$tmp/board$n/sshd.log" &
  pids+=($!)
  board_pid=$!  # sshd itself: unshare and sh exec it
  local up=""
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && up=1 && break; sleep 0.05; done
  [ -n "$up" ] || { echo "bench: board $n's sshd did not start:"; cat "$tmp/board$n/sshd.log"; exit 1; }
  board_port=$port
}

echo "== farm bench, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "efficientnet_b1 bf16, stand-in latencies: compile $compile_s s, run $run_s s per job"
for kc in "${configs[@]}"; do
  k=${kc%%:*} c=${kc##*:}
  [ $((c % k)) -eq 0 ] || { echo "bench: lanes $c are not a multiple of boards $k"; exit 2; }
  run="$tmp/k$k-c$c"
  mkdir -p "$run"
  pids=()
  boards=()
  workers=()
  ep="tcp://127.0.0.1:$(free_port)"
  "$coord" --model "$model" --auto-convert-bf16 --target astra --bind "$ep" --db "$run/db" --export "$run/out" \
    --min-workers "$k" >"$run/coord.out" 2>"$run/coord.err" &
  cpid=$!
  for ((i = 0; i < k; i++)); do
    board "$i-$k"
    boards+=("$board_pid")
    "$worker" --connect "$ep" --id "board$i" --cache "$run/cache$i" --target astra --backend toolchain \
      --toolchain "$tmp/farm.yaml" --board "root@127.0.0.1:$board_port" --ssh-key "$tmp/client" \
      --board-host-keys ignore --no-health-check --capacity $((c / k)) 2>"$run/worker$i.log" &
    pids+=($!)
    workers+=($!)
  done
  read -r _ u0 n0 s0 i0 w0 _ </proc/stat
  rc=0
  wait "$cpid" || rc=$?
  cpid=""
  read -r _ u1 n1 s1 i1 w1 _ </proc/stat
  busy_ticks=$(( (u1 + n1 + s1) - (u0 + n0 + s0) ))
  busy=$(awk -v b=$busy_ticks -v t=$(( (u1 + n1 + s1 + i1 + w1) - (u0 + n0 + s0 + i0 + w0) )) \
    'BEGIN{printf "%.0f", t ? 100 * b / t : 0}')
  # The boards' side: the CPU of each sshd and of its processes, live (a
  # connection's process lives while its ControlMaster does) or reaped
  # (their children's time is in their parents' cutime and cstime).
  board_ticks=$(python3 - "${boards[@]}" <<'PY'
import os, sys
stat = {}
for d in os.listdir("/proc"):
    if d.isdigit():
        try:
            f = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stat[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]))  # ppid; utime stime cutime cstime
todo, ticks = [int(p) for p in sys.argv[1:]], 0
while todo:
    p = todo.pop()
    if p in stat:
        ticks += stat[p][1]
        todo += [c for c, (pp, _) in stat.items() if pp == p]
print(ticks)
PY
)
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  if [ "$rc" -ne 0 ] || ! grep -q ": complete ==" "$run/coord.out"; then
    echo "bench: boards $k, lanes $c: the run failed (exit $rc)"; tail -5 "$run/coord.err"; exit 1
  fi
  jobs=$(sed -n 's/^jobs *\([0-9]*\) finished.*/\1/p' "$run/coord.out")
  wall=$(sed -n 's/^phases.* job phase \([0-9.]*\) s.*/\1/p' "$run/coord.out")
  [[ $jobs =~ ^[0-9]+$ && $wall =~ ^[0-9.]+$ ]] && [ "$wall" != 0.00 ] ||
    { echo "bench: no jobs or job phase in the coordinator's summary:"; cat "$run/coord.out"; exit 1; }
  board_s=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(sum(e.get("timing", {}).get("runtime_ms", 0) or 0 for op in r["ops"].values() for e in op["executors"].values()) / 1000)
' "$(ls "$run"/out/torq_gen_config_*.json | grep -v '_compiler.json$' | head -1)")
  awk -v k="$k" -v c="$c" -v n="$jobs" -v s="$wall" -v cs="$compile_s" -v rs="$run_s" -v b="$board_s" 'BEGIN {
    ideal = n * cs / c; if (n * rs / k > ideal) ideal = n * rs / k
    printf "farm: boards %d, lanes %d, jobs %d, wall %.1f s, efficiency %.2f, board utilization %.2f, speedup over sequential %.1f\n",
      k, c, n, s, ideal / s, b / (k * s), n * (cs + rs) / s
  }'
  echo "      this machine's $(nproc) cores were ${busy}% busy during the run (the stand-in's own work and ssh)"
  # What this machine's CPU allows: every job's processes (the stand-in's
  # steps, ssh and scp, the boards' sshd and shells, the worker, the
  # coordinator) share its cores, which a real farm spreads over hosts and
  # boards.
  awk -v k="$k" -v c="$c" -v n="$jobs" -v cs="$compile_s" -v rs="$run_s" -v b="$busy_ticks" -v hz="$(getconf CLK_TCK)" \
    -v p="$(nproc)" -v bt="$board_ticks" 'BEGIN {
    ideal = n * cs / c; if (n * rs / k > ideal) ideal = n * rs / k
    cpu = b / hz; floor = cpu / p; bound = floor > ideal ? ideal / floor : 1
    printf "bound: the run used %.0f CPU-s, %.0f ms per job; on %d cores the wall is at least %.1f s, so efficiency <= %.2f here\n",
      cpu, 1000 * cpu / n, p, floor, bound
    bcpu = bt / hz; hcpu = cpu - bcpu; hfloor = hcpu / p; hbound = hfloor > ideal ? ideal / hfloor : 1
    printf "       board side (the sshd of each board and all it ran: shells, the run step, staging) %.0f ms per job; host side (coordinator, workers, import and compile steps, ssh and scp clients) %.0f ms per job, which alone allows efficiency <= %.2f on %d cores\n",
      1000 * bcpu / n, 1000 * hcpu / n, hbound, p
  }'
  grep -h "waiting for the board lock" "$run"/worker*.log | head -2 || true
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
