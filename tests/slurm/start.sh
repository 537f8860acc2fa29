#!/usr/bin/env bash
# Start a one-node SLURM on this machine for the SLURM test: munged, slurmctld and slurmd,
# each in the foreground of its own background process, its PID recorded in STATE_DIR.
# Stop it with tests/slurm/stop.sh STATE_DIR, which ends those PIDs and nothing else.
#
#   tests/slurm/start.sh STATE_DIR
#
# Needs root. Installs munge and SLURM with apt-get when they are missing. Writes
# /etc/slurm/slurm.conf (the only place every SLURM client, srun inside a job included, reads
# it from) and refuses to touch one it did not write. Everything else (munge key and socket,
# SLURM state, spool, logs, PID files) lives in STATE_DIR.
set -euo pipefail

STATE=${1:?usage: tests/slurm/start.sh STATE_DIR}
CONF=/etc/slurm/slurm.conf
MARK="# one-node test cluster written by tests/slurm/start.sh"

die() { echo "start.sh: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (munged, slurmctld and slurmd run as root here)."

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v munged >/dev/null || ! command -v squeue >/dev/null; then
    echo "start.sh: installing munge and SLURM with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends munge slurmctld slurmd slurm-client >/dev/null
fi

if [ -e "$CONF" ] && ! grep -qxF "$MARK" "$CONF"; then
    die "$CONF exists and was not written by this script: this machine already has a SLURM. Nothing was started."
fi
if [ -e "$CONF" ] && squeue -h >/dev/null 2>&1; then
    die "a test cluster is already running ($CONF answers). Stop it with tests/slurm/stop.sh first."
fi

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
[ -e "$STATE/pids" ] && die "$STATE/pids exists: a cluster was started from this folder already."
mkdir -p "$STATE/pids" "$STATE/log" "$STATE/ctld" "$STATE/slurmd" "$STATE/munge-key" "$STATE/munge"
# munged checks its folders: the key folder private, the socket folder readable by all.
chmod 0700 "$STATE/munge-key"
chmod 0755 "$STATE" "$STATE/munge"
head -c 1024 /dev/urandom >"$STATE/munge-key/munge.key"
chmod 0400 "$STATE/munge-key/munge.key"
SOCKET="$STATE/munge/munge.socket"

# Started in a new session with every stream redirected, so that nothing here holds the
# caller's terminal or pipes, and each PID is the daemon itself (no fork: -F, -D).
launch() {
    local name=$1
    shift
    setsid "$@" </dev/null >"$STATE/log/$name.out" 2>&1 &
    echo $! >"$STATE/pids/$name"
}

launch munged munged -F --force --socket="$SOCKET" --key-file="$STATE/munge-key/munge.key" \
    --log-file="$STATE/log/munged.log" --pid-file="$STATE/munge/munged.pid" \
    --seed-file="$STATE/munge/munged.seed"
for _ in $(seq 50); do [ -S "$SOCKET" ] && break; sleep 0.1; done
[ -S "$SOCKET" ] || die "munged did not start; see $STATE/log/munged.out"

NODE=$(slurmd -C | head -n 1)
HOST=$(hostname -s)
mkdir -p /etc/slurm
cat >"$CONF" <<CONF
$MARK
# state: $STATE
ClusterName=agentab-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
# Bind to the node's address (127.0.0.1) rather than to every interface.
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
# squeue (the executor's status command here: there is no accounting database) sees a job
# until MinJobAge seconds after it ends; keep it at least 3 x the executor's first status delay.
MinJobAge=300
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/ctld/slurmctld.pid
SlurmdPidFile=$STATE/slurmd/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

launch slurmctld slurmctld -D -i
launch slurmd slurmd -D
for _ in $(seq 120); do
    state=$(sinfo -h -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || die "the node did not become idle (state: '${state}'); see $STATE/log/"
echo "start.sh: one-node SLURM up (node $HOST, state in $STATE)" >&2
