#!/usr/bin/env bash
# Stop the one-node SLURM that tests/slurm/start.sh STATE_DIR started: cancel the jobs still
# on it, end slurmd, slurmctld and munged by the PIDs recorded in STATE_DIR/pids (nothing is
# looked up by name), and remove the /etc/slurm/slurm.conf that start.sh wrote for it.
#
#   tests/slurm/stop.sh STATE_DIR
set -uo pipefail

STATE=${1:?usage: tests/slurm/stop.sh STATE_DIR}
[ -d "$STATE/pids" ] || { echo "stop.sh: no $STATE/pids: nothing was started there." >&2; exit 0; }
STATE=$(cd "$STATE" && pwd)
CONF=/etc/slurm/slurm.conf
OURS=0
grep -qxF "# state: $STATE" "$CONF" 2>/dev/null && OURS=1

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$STATE/pids/$1" 2>/dev/null || true; }

# Jobs of this cluster (all of them are the test's): cancel, and give their steps a moment.
if [ "$OURS" = 1 ] && alive "$(pid_of slurmctld)"; then
    scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 40); do
        [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
        sleep 0.25
    done
fi

# slurmd before slurmctld before munged: each still needs the next while it stops.
for name in slurmd slurmctld munged; do
    pid=$(pid_of "$name")
    alive "$pid" || continue
    kill -TERM "$pid"
    for _ in $(seq 40); do alive "$pid" || break; sleep 0.25; done
    alive "$pid" && kill -KILL "$pid"
done

[ "$OURS" = 1 ] && rm -f "$CONF"
echo "stop.sh: stopped the one-node SLURM of $STATE" >&2
exit 0
