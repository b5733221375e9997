#!/bin/bash
# bench/daemon_cpu_ab.sh BIN_A BIN_B GRAPH_A GRAPH_B PAIRS QUERY [REPO]
# CPU (perf stat task-clock) per answer of QUERY (symbol profile) in two warm daemons,
# each on its own graph of REPO (default /tmp/trees/sympy), 40 answers per pair, interleaved.
R=${7:-/tmp/trees/sympy}
A=$1; B=$2; GA=$3; GB=$4; N=$5; Q=$6
for i in 0 1; do BIN=$([ $i = 0 ] && echo $A || echo $B); G=$([ $i = 0 ] && echo $GA || echo $GB)
  $BIN --code $R --graph $G daemon start --query-workers 2 --watch >/dev/null 2>&1; done
sleep 4
for i in 0 1; do BIN=$([ $i = 0 ] && echo $A || echo $B); G=$([ $i = 0 ] && echo $GA || echo $GB)
  for k in 1 2 3 4 5; do $BIN --code $R --graph $G context "$Q" --profile symbol --execution worker >/dev/null 2>&1; done; done
for p in $(seq 1 $N); do
 for i in 0 1; do BIN=$([ $i = 0 ] && echo $A || echo $B); G=$([ $i = 0 ] && echo $GA || echo $GB)
  PID=$(pgrep -f "graph $G daemon" | head -1)
  perf stat -e task-clock -p $PID -x, -o /tmp/ps.$i -- bash -c "for k in \$(seq 1 40); do $BIN --code $R --graph $G context '$Q' --profile symbol --execution worker >/dev/null 2>&1; done"
  echo "pair $p bin $i: $(awk -F, '/task-clock/{printf "%.3f", $1/40}' /tmp/ps.$i) ms/answer"
 done
done
for i in 0 1; do BIN=$([ $i = 0 ] && echo $A || echo $B); G=$([ $i = 0 ] && echo $GA || echo $GB); $BIN --code $R --graph $G daemon stop >/dev/null 2>&1; done
