#!/usr/bin/env bash
# A real single-node Slurm (Debian's slurmctld + slurmd + munge, no systemd) over loopback, for the
# tests of `nsighttk submit`.  After ../shared/ci/slurm-local.sh, without its smoke test and without
# stopping on exit.  Needs root.  Idempotent.
#   bash tests/tools/slurm.sh install   apt packages only (make setup)
#   bash tests/tools/slurm.sh up        install if needed, configure, start; waits until the node is idle
#   bash tests/tools/slurm.sh down      stop the daemons it started
set -euo pipefail
W=/tmp/slurm-ci
PIDFILES=(/var/spool/slurmd/slurmd.pid /var/spool/slurmctld/slurmctld.pid /run/munge/munged.pid)
log() { echo "[slurm.sh $(date +%T)] $*"; }

install() {
  if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
     && command -v munged >/dev/null; then return 0; fi
  timeout 300 apt-get update -qq
  # postinst tries to start the services: a no-op without systemd
  DEBIAN_FRONTEND=noninteractive timeout 540 apt-get install -y -qq --no-install-recommends \
    munge slurmctld slurmd slurm-client >/dev/null
  log "installed $(dpkg-query -W -f '${Package}=${Version} ' munge slurmctld slurmd slurm-client)"
}

up() {
  if sinfo -h -o %T 2>/dev/null | grep -qx idle; then log "already up"; return 0; fi
  install
  mkdir -p $W /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
  chmod 1777 $W
  chown munge:munge /run/munge
  [ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }
  cat > /etc/slurm/slurm.conf <<EOF
ClusterName=ci
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/var/spool/slurmctld/slurmctld.pid
SlurmdPidFile=/var/spool/slurmd/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=/var/log/slurm/jobcomp.log
MinJobAge=600
InactiveLimit=0
KillWait=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2>/dev/null ||
    runuser -u munge -- munged --log-file=/run/munge/munged.log --seed-file=/run/munge/munged.seed \
      --pid-file=/run/munge/munged.pid
  munge -n | unmunge >/dev/null
  slurmctld -i
  slurmd -N localhost
  for _ in $(seq 120); do [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && break; sleep 0.25; done
  [ "$(sinfo -h -o %T)" = idle ] || { tail -n 30 /var/log/slurm/*.log; exit 1; }
  log "cluster up: $(sinfo -h -o '%P %D %T %C')"
}

down() {
  local f p
  for f in "${PIDFILES[@]}"; do
    [ -s "$f" ] || continue; p=$(cat "$f"); kill "$p" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p"; rm -f "$f"; log "stopped $p ($f)"
  done
}

"${1:-up}"
