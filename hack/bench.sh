#!/usr/bin/env bash
# make bench: tfccm's speed and memory targets, measured in one run. Absolute
# times on shared machines are noise; the ratios and counts are the targets:
#   engine vs raw tofu      ratio            goal <= 1.2   (issue: workspace engine)
#   40 new workspaces, no cloud cost: engine vs raw tofu init/plan/apply at the
#                           same parallelism: wall ratio, CPU s per workspace of
#                           each side and of the engine with provider_mtls
#   churn, 20 LBs x 10 node events in 10 s   applies/service <= 2, converged <= 30 s
#   routes, 1,000 nodes     applies/initial-sync <= 3, applies/period == 0
#   state, 5,000 instances  lookups/s >= 200k, reads (5,000 cold lookups) == 1,
#                           refresh cost, bytes/index
#   render of one LB over 500 nodes; local LB update through HAProxy
#   render + plan of one LB over 500 nodes per template set through the
#   stand-in, as a ratio to the local set (x-local; sets above 2x say why
#   in their README)
#   burst, 1,000 Services at once (TFCCM_BENCH_BURST=N; 200 before #52)  ratio to raw
#                           tofu: goal <= 1.0 at 1,000 (fails above 1.2),
#                           failed applies == 0, tofu time and CPU per Service of each
#                           side, HAProxy reloads, the cost of ensure_wait (time, Warnings)
#   encryption, 50 Services at once  key_provider "tfccm_pbkdf2" vs no encryption: ratio
#                           <= 1.2 (TFCCM_BENCH_ENCRYPTION=N; TFCCM_BENCH_ENCRYPTION_PBKDF2=1
#                           adds OpenTofu's own pbkdf2, a key derived in every tofu command)
#   baremetal, two LB hosts over SSH   VRRP failover median of 10 < 3 s, <= 3
#                           requests lost at 20 req/s; applies/Service per node change == 1
#   baremetal l4 (nftables + conntrackd)   VRRP failover <= 3 s, <= 3 requests lost at
#                           20 req/s, >= 95% of 50 long-lived connections alive after it
#   the CCM at 1,000 load balancers (TFCCM_BENCH_CCM=N, 5,000 where the machine
#                           allows; cheap template test/e2e/testdata/scale): RSS <= 200 MiB,
#                           memory per Service and per Node (slopes), 0 tofu processes idle,
#                           0 tofu starts on a restart with every workspace unchanged, drift
#                           plans <= 1 per LB per interval and <= 1% of them in any second
#   review mode under node churn, 1,000 LBs x one node joining: approvals needed
#                           without the rule backends-only-without-review (== N) and
#                           with it (== 0), time to converge each way
#                           (TFCCM_BENCH_REVIEW_CHURN=N)
#   baremetal bgp (FRR, ECMP, BFD 100 ms x 3, then 20 ms x 3; then hosts on routed
#                           ports)   a host's FRR killed or its link down: outage median
#                           <= 1 s, <= 1 request lost at 20 req/s (a link down behind a
#                           switch, BFD alone: 20 ms x 3 loses a median of 1, 100 ms x 3 ~3;
#                           a routed port's link down: 0)
#   health reads, one interval: per load balancer (a health module each) vs the
#                           set's hosts health module, local set at N = 10, 100 and
#                           1,000 (TFCCM_BENCH_HOSTHEALTH_PERLB: the per-LB side read for
#                           100 and scaled): tofu runs, wall time, share of the run
#                           budget (goal <= 5% at 1,000); baremetal, 10 load balancers
#                           on two LB hosts over SSH: logins per interval (N x H vs H)
#   runner Jobs on 3 real nodes (make bench-runners): 200 Services through runner
#                           Jobs vs in-process at the same parallelism: ratio, pods per
#                           apply, Job wall time, pod start, apiserver writes and etcd
#                           bytes per apply (TFCCM_BENCH_RUNNERS=N, TFCCM_BENCH_PARALLELISM)
#   node mode on 3 real nodes (make bench-nodemode): the holder's kubelet stopped, its
#                           agent killed, its node powered off, drained; 20 req/s through
#                           the VIP: median <= 1.5 s, max 3 s, <= 2 lost (drain: 0), no
#                           failback, never two holders (TFCCM_BENCH_NODEMODE=rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"

run() { # run PKG BENCH-REGEXP BENCHTIME [TEST FLAGS...]
	echo "### go test -run '^\$' -bench '$2' -benchtime $3 $1 ${*:4}"
	go test -run '^$' -bench "$2" -benchtime "$3" -benchmem -count=1 -timeout 30m "$1" "${@:4}"
}

run ./workspace/ 'EngineVsRawTofu' 30x
run ./workspace/ 'NewWorkspacesVsRawTofu' 1x
run ./workspace/ 'ChurnCoalescing' 1x
if grep -qs '^func BenchmarkRoutes' ccm/*_test.go; then
	run ./ccm/ 'Routes' 1x
fi
run ./instances/ '.' 1s
run ./templates/ 'RenderLoadBalancer500Nodes' 10x
run ./test/clouds/ 'Plan500Nodes' 5x
run ./test/localcloud/ 'LoadBalancerUpdate' 5x
run ./test/e2e/ 'BaremetalFailover|BaremetalNodeChange' 1x
run ./lbhost/hosttest/ 'BaremetalL4Failover' 1x
run ./lbhost/hosttest/ 'BaremetalBGPFailover' 1x
run ./lbhost/hosttest/ 'BaremetalBGPFailover' 1x -bgp.bfd-interval=20ms
run ./lbhost/hosttest/ 'BaremetalBGPFailover' 1x -bgp.routed-ports

# Burst: N LoadBalancer Services at once through the CCM (the binary's own
# defaults: 10 service workers, as the chart) vs raw tofu
# init/plan/apply of the same rendered workspaces at the same parallelism
# (goal ratio <= 1.2, 0 failed applies), with the default ensure_wait and
# with ensure_wait = 0s (its cost: time vs SyncLoadBalancerFailed Warnings).
for wait in "" 0s; do
	echo "### burst of ${TFCCM_BENCH_BURST:-1000} Services, ensure_wait=${wait:-default}"
	TFCCM_BENCH_BURST=${TFCCM_BENCH_BURST:-1000} TFCCM_BENCH_ENSURE_WAIT=$wait \
		go test -count=1 -timeout 180m -run '^TestBurstVsRawTofu$' -v ./test/e2e/ | grep -E 'BURST|CCM:|FAIL|ok ' || true
done

# The CCM itself at N load balancers (docs/scale.md#the-ccm-at-1000-and-5000-load-balancers):
# memory, idle tofu processes, a restart with nothing changed, drift spread.
echo "### the CCM at ${TFCCM_BENCH_CCM:-1000} load balancers"
TFCCM_BENCH_CCM=${TFCCM_BENCH_CCM:-1000} \
	go test -count=1 -timeout 300m -run '^TestCCMScaleBench$' -v ./test/e2e/ | grep -E 'CCM_SCALE|FAIL|ok ' || true

# Encryption: N Services at once without encryption, then with key_provider
# "tfccm_pbkdf2" (keys derived once per CCM process), same run: goal <= 1.2.
echo "### encryption: burst of ${TFCCM_BENCH_ENCRYPTION:-50} Services, tfccm_pbkdf2 vs none"
TFCCM_BENCH_ENCRYPTION=${TFCCM_BENCH_ENCRYPTION:-50} \
	go test -count=1 -timeout 60m -run '^TestEncryptionBurst$' -v ./test/e2e/ | grep -E 'ENCRYPTION|FAIL|ok ' || true

# Review mode under node churn (docs/scale.md#review-mode-under-node-churn).
echo "### review mode, ${TFCCM_BENCH_REVIEW_CHURN:-1000} load balancers x one node joining, with and without the rule"
TFCCM_BENCH_REVIEW_CHURN=${TFCCM_BENCH_REVIEW_CHURN:-1000} \
	go test -count=1 -timeout 180m -run '^TestReviewChurnBench$' -v ./test/e2e/ | grep -E 'REVIEW_CHURN|FAIL|ok ' || true

# Health reads per LB host instead of per load balancer
# (docs/scale.md#health-reads-per-lb-host).
for n in 10 100 1000; do
	echo "### health reads, ${n} load balancers of the local set"
	TFCCM_BENCH_HOSTHEALTH=$n TFCCM_BENCH_HOSTHEALTH_PERLB=100 \
		go test -count=1 -timeout 40m -run '^TestHostHealthBench$' -v ./test/localcloud/ | grep -E 'HOSTHEALTH|FAIL|ok ' || true
done
echo "### health reads, 10 load balancers on two baremetal LB hosts over SSH"
TFCCM_BENCH_HOSTHEALTH_SSH=10 go test -count=1 -timeout 30m -run '^TestBaremetalHostHealth$' -v ./lbhost/hosttest/ | grep -E 'FIGURE|FAIL|ok ' || true

# Runner Jobs on 3 real nodes against in-process (docs/scale.md#runner-jobs).
echo "### runner Jobs vs in-process, ${TFCCM_BENCH_RUNNERS:-200} Services on 3 real nodes"
make --no-print-directory bench-runners | grep -E 'RUNNERS:|real nodes up|--- |^(ok|FAIL)|_test.go:[0-9]+: .*(want|fail|Error)' || true

# Node mode's failover on 3 real nodes (docs/node-mode.md#measured).
echo "### node mode failover, ${TFCCM_BENCH_NODEMODE:-5} rounds of each fault on 3 real nodes"
make --no-print-directory bench-nodemode | grep -E 'NODEMODE-REAL|real nodes up|--- |^(ok|FAIL)|_test.go:[0-9]+: .*(want|fail|Error)' || true
