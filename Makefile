# tfccm — see README.md.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

BIN      := $(CURDIR)/bin
GO       ?= go
# One build configuration for everything make builds and tests: static
# (no cgo) and -trimpath, as the image needs (reproducible, no libc). The
# tests, `make build` and the image builds the tests run then share one set
# of compiled packages: a cold `make test` compiles the module once, not twice.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) $(shell go env GOFLAGS) -trimpath)
export PATH := $(BIN):$(PATH)

comma := ,
BINARIES := terraform-cloud-controller-manager tfccm devcluster tfccm-demo lbhost-router

.PHONY: release release-check all build tools tools-image tools-nodes tools-e2e tools-s3 tools-metallb test-backends test-nodes conformance conformance-fast standin test test-terraform unit lint bench bench-runners bench-nodemode soak demo demo-down clean clean-leftovers image

# VERSION: the one version of this build (docs/releasing.md), from
# `git describe --tags --always --dirty` (hack/version.sh). Override with
# VERSION=. VERSION_LDFLAGS stamps it, with the
# commit and the commit's time (never the clock: builds stay reproducible),
# into internal/version and k8s.io/component-base/version (the CCM's
# --version) of every binary make builds.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell bash hack/version.sh)
endif
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
endif
VERSION_MAJOR := $(shell echo '$(VERSION)' | sed -n 's/^v\([0-9]*\)\..*/\1/p')
VERSION_MINOR := $(shell echo '$(VERSION)' | sed -n 's/^v[0-9]*\.\([0-9]*\).*/\1/p')
TREE_STATE := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo dirty || echo clean)
VERSION_LDFLAGS := -X github.com/tfccm/tfccm/internal/version.version=$(VERSION) \
	-X github.com/tfccm/tfccm/internal/version.commit=$(GIT_COMMIT) \
	-X k8s.io/component-base/version.gitVersion=$(VERSION) \
	-X k8s.io/component-base/version.gitCommit=$(GIT_COMMIT) \
	-X k8s.io/component-base/version.gitTreeState=$(TREE_STATE) \
	-X k8s.io/component-base/version.gitMajor=$(VERSION_MAJOR) \
	-X k8s.io/component-base/version.gitMinor=$(VERSION_MINOR) \
	-X k8s.io/component-base/version/verflag.programName=terraform-cloud-controller-manager \
	-X k8s.io/component-base/version.buildDate=$(shell TZ=UTC date -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
VGO := $(GO) build -ldflags "$(VERSION_LDFLAGS)"

# make image: the container image. IMAGE names it, PROVIDERS is an optional
# `tofu providers mirror` directory baked into its provider mirror,
# IMAGE_DIR receives the OCI layout (oci/), the load archive (tfccm.tar)
# and the digest. The same commit always gives the same digest.
IMAGE     ?= ghcr.io/tfccm/tfccm:$(VERSION)
PROVIDERS ?=
IMAGE_DIR ?= $(CURDIR)/.work/image
# The image's CA bundle (for tofu's registries and backends), taken from the
# build machine: Debian/Ubuntu's ca-certificates path; Fedora's is
# /etc/pki/tls/certs/ca-bundle.crt.
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
STATIC    := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -buildid= $(VERSION_LDFLAGS)"

# The lbhost provider, installed into a filesystem mirror under bin/providers.
LBHOST_VERSION := $(shell sed -n 's/^const Version = "\(.*\)"$$/\1/p' lbhost/mirror/version.go)
LBHOST_MIRROR  := $(BIN)/providers
LBHOST_PLATFORM := $(LBHOST_VERSION)/$(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)/terraform-provider-lbhost_v$(LBHOST_VERSION)
# Under OpenTofu's and Terraform's registry host, so `source = "tfccm/lbhost"` works in both.
LBHOST_BIN     := $(LBHOST_MIRROR)/registry.opentofu.org/tfccm/lbhost/$(LBHOST_PLATFORM)
LBHOST_BIN_TF  := $(LBHOST_MIRROR)/registry.terraform.io/tfccm/lbhost/$(LBHOST_PLATFORM)


all: build

## build: the CCM, the tfccm CLI and devcluster into bin/; the lbhost provider into the
## filesystem mirror bin/providers, a CLI config using it into bin/lbhost.tfrc and the
## mirror's checksums into bin/providers.lock.hcl (terraform.provider_lock_file)
build:
	@mkdir -p $(BIN)
	$(VGO) -o $(BIN)/terraform-cloud-controller-manager ./cmd/terraform-cloud-controller-manager
	$(VGO) -o $(BIN)/tfccm ./cmd/tfccm
	ln -sf tfccm $(BIN)/kubectl-tfccm  # kubectl plugin: kubectl tfccm approve --list
	ln -sf tfccm $(BIN)/kubectl_complete-tfccm  # kubectl completes kubectl tfccm through it
	$(GO) build -o $(BIN)/devcluster ./hack/devcluster
	$(VGO) -o $(BIN)/lbhost-router ./lbhost/cmd/lbhost-router
	@mkdir -p $(dir $(LBHOST_BIN))
	$(VGO) -o $(LBHOST_BIN) ./lbhost/cmd/terraform-provider-lbhost
	@mkdir -p $(dir $(LBHOST_BIN_TF))
	cp -f $(LBHOST_BIN) $(LBHOST_BIN_TF)
	$(LBHOST_BIN) -cli-config $(LBHOST_MIRROR) > $(BIN)/lbhost.tfrc
	$(LBHOST_BIN) -lock-file $(LBHOST_MIRROR) > $(BIN)/providers.lock.hcl

## image: OCI image (layout in $(IMAGE_DIR)/oci, `podman load` archive $(IMAGE_DIR)/tfccm.tar)
## The image's provider mirror always holds tfccm's own lbhost provider (the
## built-in local set uses it), plus PROVIDERS when given. Needs only Go (and
## a CA bundle, CA_BUNDLE): OpenTofu from the module proxy (make tools-image),
## no test tools, no Debian packages (docs/install.md#build-the-image)
image: tools-image
	@mkdir -p $(IMAGE_DIR)/bin
	$(STATIC) -o $(IMAGE_DIR)/bin/terraform-cloud-controller-manager ./cmd/terraform-cloud-controller-manager
	$(STATIC) -o $(IMAGE_DIR)/bin/tfccm ./cmd/tfccm
	rm -rf $(IMAGE_DIR)/mirror
	$(STATIC) -o $(IMAGE_DIR)/mirror/registry.opentofu.org/tfccm/lbhost/$(LBHOST_PLATFORM) ./lbhost/cmd/terraform-provider-lbhost
	$(if $(PROVIDERS),cp -R $(abspath $(PROVIDERS))/. $(IMAGE_DIR)/mirror/)
	$(GO) run ./hack/image --ref $(IMAGE) --version $(VERSION) --revision $(GIT_COMMIT) \
		--created $(SOURCE_DATE_EPOCH) --license LICENSE \
		--ccm $(IMAGE_DIR)/bin/terraform-cloud-controller-manager --tfccm $(IMAGE_DIR)/bin/tfccm --tofu $(BIN)/tofu \
		--providers $(IMAGE_DIR)/mirror --ca-bundle $(CA_BUNDLE) \
		--layout $(IMAGE_DIR)/oci --tarball $(IMAGE_DIR)/tfccm.tar > $(IMAGE_DIR)/digest
	@echo "$(IMAGE) $$(cat $(IMAGE_DIR)/digest)"

## release: VERSION=vX.Y.Z writes DIST (default dist/): per platform (RELEASE_PLATFORMS) the CCM,
## tfccm, lbhost-router and the lbhost provider (tar.gz), the image (multi-platform OCI archive and
## per-platform `podman load` archives), the chart (.tgz), the lbhost provider mirror, SBOMs and
## SHA256SUMS; docs/releasing.md. The tree must name VERSION and be clean (ALLOW_DIRTY=1 to try).
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
DIST ?= $(CURDIR)/dist
ALLOW_DIRTY ?=
release: tools
	bash hack/tools.sh release-tofu $(notdir $(RELEASE_PLATFORMS))
	@mkdir -p .work
	$(GO) run ./hack/release --version $(VERSION) --out $(DIST) --created $(SOURCE_DATE_EPOCH) \
		--ldflags "$(VERSION_LDFLAGS)" --helm $(BIN)/helm $(if $(ALLOW_DIRTY),--allow-dirty) \
		--platforms $(subst $(eval) ,$(comma),$(RELEASE_PLATFORMS)) \
		$(foreach p,$(RELEASE_PLATFORMS),--tofu $(p)=$(BIN)/tofu-linux-$(notdir $(p)))

## release-check: make release twice into .work/release-{a,b} and compare their SHA256SUMS (reproducible)
release-check:
	$(MAKE) --no-print-directory release DIST=$(CURDIR)/.work/release-a
	$(MAKE) --no-print-directory release DIST=$(CURDIR)/.work/release-b
	diff $(CURDIR)/.work/release-a/SHA256SUMS $(CURDIR)/.work/release-b/SHA256SUMS
	@echo "release-check: identical SHA256SUMS ($$(wc -l < $(CURDIR)/.work/release-a/SHA256SUMS) files)"

## tools: pinned OpenTofu, kube-apiserver and kube-controller-manager into bin/ (cached), Debian packages
tools:
	bash hack/tools.sh

## tools-image: only what make image needs besides tfccm's sources: pinned OpenTofu into bin/ (cached),
## built with Go alone (no Debian packages)
tools-image:
	bash hack/tools.sh image

## tools-nodes: the parts of real nodes (make tools, plus kubelet, kube-proxy, kube-controller-manager,
## kube-scheduler, containerd, CoreDNS, CNI plugins into bin/, cached like the others) and the
## images they run (pause, agnhost) into bin/images
tools-nodes: tools
	bash hack/tools.sh nodes
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/pause ./test/nodes/pause
	$(GO) run ./hack/nodeimages --bin $(BIN) --out $(BIN)/images --rootfs "$$(bash hack/agnhost-rootfs.sh)"

## tools-e2e: the upstream Kubernetes e2e suite as bin/e2e.test (cached; ~4 min cold), for the
## LoadBalancer conformance specs on real nodes
tools-e2e: tools
	bash hack/tools.sh e2e

## tools-s3: SeaweedFS (bin/weed), the S3-compatible server of the s3 backend tests
tools-s3: tools
	bash hack/tools.sh s3
## tools-metallb: MetalLB's controller, its speaker and its CRDs into bin/ (cached; ~4 min cold), the second load
## balancer controller the real-node tests run beside tfccm
tools-metallb: tools
	bash hack/tools.sh metallb

## test-nodes: the real-node tests (control plane + local cloud + nodes running pods, tfccm as their CCM,
## also in-cluster from the image and the Helm chart)
test-nodes: tools-nodes tools-metallb build image
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-nodes
	rc=0; TFCCM_NODES=1 IMAGE_DIR=$(IMAGE_DIR) $(GO) test -count=1 -timeout 40m -v ./test/nodes/ || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-nodes || rc=1; exit $$rc

## standin: the test stand-in for real cloud providers (never shipped) into bin/, installed under the
## real provider addresses into bin/standin-mirror with the CLI config bin/standin.tfrc
standin:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/terraform-provider-standin ./test/standin/cmd/terraform-provider-standin
	$(BIN)/terraform-provider-standin install -mirror $(BIN)/standin-mirror -cli-config $(BIN)/standin.tfrc

## lint: gofmt, go vet, tofu fmt (templates with deliberate syntax errors excepted), and a clean
## tree: no tracked ELF/PE/Mach-O file and none over 1 MiB (exceptions: hack/cleantree/allowed.txt)
lint: tools
	$(GO) run ./hack/cleantree
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	env -u TF_CLI_CONFIG_FILE $(BIN)/tofu fmt -check -diff $$(git ls-files '*.tf' | grep -v '/testdata/invalid/')

## conformance: the upstream `[sig-network] LoadBalancers` specs (bin/e2e.test) against tfccm on 3 real
## nodes, tfccm's routed VIP as the default LB; per-spec table in .work/conformance/results.md
CONFORMANCE_FLAGS ?=
conformance: tools-nodes tools-e2e build
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-conformance
	rc=0; $(GO) run ./hack/conformance --nodes 3 --dir .work/conformance $(CONFORMANCE_FLAGS) || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-conformance || rc=1; exit $$rc

## conformance-nodes: the same specs with node mode as the default LB (the nodes set, a pool on the
## nodes' network, a node agent on each of 3 real nodes); not in make test; per-spec table in
## .work/conformance-nodes/results.md (docs/node-mode.md#upstream-conformance). CONFORMANCE_NODES_SKIP:
## a ginkgo skip regexp of the specs that cannot apply to node mode, each with its reason:
## - "switch session affinity ... with Local traffic policy": one node holds the VIP and, with
##   externalTrafficPolicy Local, its kube-proxy sends only to that node's endpoints; the spec's 3 pods
##   are spread one per node, so with sessionAffinity None one pod still answers every request and the
##   spec's "affinity must not hold" check fails (it could pass only with 2 pods on the holder; as with
##   MetalLB's L2 mode; the local set's routed VIP, spread over the nodes, passes it)
CONFORMANCE_NODES_SKIP ?= switch session affinity for LoadBalancer service with Local traffic policy
conformance-nodes: tools-nodes tools-e2e build
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-conformance-nodes
	rc=0; $(GO) run ./hack/conformance --set nodes --nodes 3 --prefix tfccmcn --dir .work/conformance-nodes \
		$(if $(CONFORMANCE_NODES_SKIP),--skip '$(CONFORMANCE_NODES_SKIP)') $(CONFORMANCE_FLAGS) || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-conformance-nodes || rc=1; exit $$rc

## conformance-fast: the fast subset of those specs on 2 real nodes (make test runs it too): a routed
## VIP with externalTrafficPolicy: Local, a Service without node ports, switching client-IP affinity
## with Local policy, and only nodes with endpoints getting traffic
CONFORMANCE_FAST := LoadBalancers .*(ExternalTrafficPolicy: Local .*should work for type=LoadBalancer|should be able to create LoadBalancer Service without NodePort|switch session affinity for LoadBalancer service with Local|should only target nodes with endpoints)
CONFORMANCE_FAST_RUN = $(GO) run ./hack/conformance --nodes 2 --dir .work/conformance-fast --focus '$(CONFORMANCE_FAST)'
conformance-fast: tools-nodes tools-e2e build
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-conformance-fast
	rc=0; $(CONFORMANCE_FAST_RUN) || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-conformance-fast || rc=1; exit $$rc

## unit: the fast tests — the pure-logic packages, with -short skipping every test that runs
## OpenTofu or a control plane (repo.Tofu, devcluster.ForTest); no tools needed, ~1 min warm
UNIT_PKGS := ./annotations/... ./config/... ./internal/... ./instances/... ./templates/... ./ccm/... \
	./workspace/... ./cmd/... ./hack/conformance/... ./lbhost/haproxy/... ./lbhost/host/... \
	./lbhost/keepalived/... ./lbhost/l4/... ./lbhost/router/... ./lbhost/announce/... ./lbhost/frr/... ./lbhost/transport/... ./fleet/... ./gate/... ./ipam/... \
	./deploy/gitops/...
unit:
	$(GO) test -short -count=1 $(UNIT_PKGS)

## E2E_LANE: the e2e tests that run in one of the two go test processes of ./test/e2e/ (LB hosts, the
## image, kill -9s, the soak and others, about half of the package's time); -skip gives the other
## process every other test. Both run beside the go test of every other package, so the longest
## package (~25 minutes in one process) does not bound make test
E2E_LANE = ^(TestBaremetal|TestServiceVarsBaremetal|TestNameHeldByOneServiceOnBaremetal|TestDemoBaremetal|TestKill9DuringAppliesBaremetal|TestDegradedFromL4|TestDegradedFromHAProxy|TestContainerServesLoadBalancer|TestImageProviderMirror|TestSoak|TestHALeaderKilledMidApply|TestKill9DuringApplies|TestRenderMatchesController|TestAdoptThroughStandIn|TestReviewModeBackendsOnly|TestMetalLBPools|TestSharedAndChosenAddresses|TestAddressPoolObjects|TestDemo|TestBurstNoWarnings)$$

## TEST_FIRST: the packages other than test/e2e that take minutes, started first (go test starts the
## package it is told first first), so none of them starts last and runs alone
TEST_FIRST := ./test/clouds/ ./lbhost/hosttest/ ./lbhost/tfprovider/ ./workspace/ ./test/localcloud/

## test: everything CI runs — lint, unit, integration and e2e tests, the fast subset of the upstream
## LoadBalancer conformance specs on real nodes, then a check that the tests left no namespace,
## process, link or cgroup of their own behind. Three go test processes at once: ./test/e2e/ in two
## (E2E_LANE and the rest; logs in .work/e2e-lane.log and .work/e2e-rest.log, printed at the end) and
## every other package in the third, the slow ones first (TEST_FIRST). The e2e tests mostly wait (on
## applies, Events, kernels), so the two cores serve all three. Only the conformance specs need the
## parts of real nodes and the e2e suite: on a cold machine they build (niced, log in
## .work/tools-nodes.log) while the Go tests run, on the CPU the tests leave idle
test: tools build standin lint
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before
	nice -n 19 $(MAKE) --no-print-directory tools-nodes tools-e2e >.work/tools-nodes.log 2>&1 & nodes=$$!; \
		$(GO) test -count=1 -timeout 45m -run '$(E2E_LANE)' ./test/e2e/ >.work/e2e-lane.log 2>&1 & lane=$$!; \
		$(GO) test -count=1 -timeout 45m -skip '$(E2E_LANE)' ./test/e2e/ >.work/e2e-rest.log 2>&1 & rest=$$!; \
		rc=0; $(GO) test -count=1 -timeout 45m $(TEST_FIRST) $$($(GO) list ./... | grep -vx 'github.com/tfccm/tfccm/test/e2e') || rc=$$?; \
		wait $$rest || { rc=1; echo "the e2e rest failed (log below: .work/e2e-rest.log)"; }; \
		echo "==> the e2e rest: go test -skip '$(E2E_LANE)' ./test/e2e/"; cat .work/e2e-rest.log; \
		wait $$lane || { rc=1; echo "the e2e lane failed (log below: .work/e2e-lane.log)"; }; \
		echo "==> the e2e lane: go test -run '$(E2E_LANE)' ./test/e2e/"; cat .work/e2e-lane.log; \
		if wait $$nodes; then cat .work/tools-nodes.log; $(CONFORMANCE_FAST_RUN) || rc=$$?; \
		else cat .work/tools-nodes.log; echo "make tools-nodes tools-e2e failed (log above: .work/tools-nodes.log)"; rc=1; fi; \
		bash hack/leftovers.sh check .work/leftovers.before || rc=1; exit $$rc

## soak: the churn soak (TestSoak) for TFCCM_SOAK (default 15m; make test runs 2m)
soak: tools build
	TFCCM_SOAK=$${TFCCM_SOAK:-15m} $(GO) test -count=1 -timeout 90m -run '^TestSoak$$' -v ./test/e2e/

## test-terraform: the local set (and the lbhost provider) with HashiCorp Terraform instead of
## OpenTofu: TERRAFORM (default: terraform on PATH) runs the local-cloud and LB/routes/drift e2e tests
TERRAFORM ?= $(shell command -v terraform)
## test-backends: the pg and s3 state backends against real servers (PostgreSQL, SeaweedFS)
test-backends: tools tools-s3 build
	TFCCM_S3=1 $(GO) test -count=1 -timeout 20m -run 'TestRealBackends|TestCatalog' ./workspace/

test-terraform: build
	@test -n "$(TERRAFORM)" || { echo "terraform not found (set TERRAFORM=...)"; exit 1; }
	TFCCM_TOFU=$(TERRAFORM) $(GO) test -count=1 -timeout 30m ./test/localcloud/
	TFCCM_TOFU=$(TERRAFORM) $(GO) test -count=1 -timeout 30m -run 'TestLoadBalancer$$|TestDriftRepair|TestRoutes$$' ./test/e2e/
	$(GO) test -count=1 -run TestTerraformCompat ./lbhost/tfprovider/

## bench: Go benchmarks and the ratio harness against raw tofu, and bench-runners (hack/bench.sh)
bench: tools build
	bash hack/bench.sh

## bench-runners: TFCCM_BENCH_RUNNERS (200) Services at once on 3 real nodes, tofu in the CCM's pod
## against runner Jobs at the same TFCCM_BENCH_PARALLELISM (6): ratio, per-run costs, apiserver writes
## per apply and etcd bytes per workspace (docs/scale.md#runner-jobs); the lines to read start RUNNERS:
TFCCM_BENCH_RUNNERS ?= 200
TFCCM_BENCH_PARALLELISM ?= 6
bench-runners: tools-nodes build image
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-bench-runners
	rc=0; TFCCM_NODES=1 TFCCM_BENCH_RUNNERS=$(TFCCM_BENCH_RUNNERS) TFCCM_BENCH_PARALLELISM=$(TFCCM_BENCH_PARALLELISM) \
		IMAGE_DIR=$(IMAGE_DIR) $(GO) test -count=1 -timeout 150m -run '^TestRunnersVsInProcess$$' -v ./test/nodes/ || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-bench-runners || rc=1; exit $$rc

## bench-nodemode: node mode's failover on 3 real nodes (chart-installed agents, kube-proxy on the
## holder): TFCCM_BENCH_NODEMODE (5) rounds each of the holder's kubelet stopped, its agent killed, its
## node powered off and drained, 20 req/s through the VIP; the lines to read start NODEMODE-REAL:
TFCCM_BENCH_NODEMODE ?= 5
bench-nodemode: tools-nodes build image
	@mkdir -p .work && bash hack/leftovers.sh snapshot .work/leftovers.before-bench-nodemode
	rc=0; TFCCM_NODES=1 TFCCM_BENCH_NODEMODE=$(TFCCM_BENCH_NODEMODE) IMAGE_DIR=$(IMAGE_DIR) \
		$(GO) test -count=1 -timeout 60m -run '^TestNodeModeFailoverBench$$' -v ./test/nodes/ || rc=$$?; \
		bash hack/leftovers.sh check .work/leftovers.before-bench-nodemode || rc=1; exit $$rc

## demo: local control plane + local cloud + CCM + a LoadBalancer Service;
## SET=baremetal: the baremetal set on two LB hosts (sshd, HAProxy, keepalived) over SSH;
## NODES=n runs it on n real nodes (a Deployment behind two LoadBalancer Services; local set)
SET ?= local
NODES ?=
demo: tools build $(if $(NODES),tools-nodes)
	bash hack/demo.sh up --set $(SET) $(if $(NODES),--nodes $(NODES))

## clean-leftovers: remove what earlier test runs left behind (network namespaces, links, cgroups and
## processes of test clouds whose test process is gone; the list make test checks), printing each
clean-leftovers:
	bash hack/leftovers.sh clean

demo-down:
	bash hack/demo.sh down

clean:
	rm -rf $(addprefix $(BIN)/,$(BINARIES)) $(LBHOST_MIRROR) $(BIN)/lbhost.tfrc $(BIN)/providers.lock.hcl .work
