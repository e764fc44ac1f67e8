package e2e

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/localcloud"
)

// TestKill9DuringApplies: the CCM with the local set is killed -9 at
// random points of 10 applies; each time, nothing of it is left running
// (tofu dies with it, the lbhost provider exits when tofu is gone) and the
// next incarnation serves the last change.
func TestKill9DuringApplies(t *testing.T) {
	cloud := localcloud.ForTest(t, localcloud.Options{})
	cluster := devcluster.ForTest(t)
	cfg, workDir := writeCloudConfig(t, t.TempDir(), harness.Block("load_balancer", cloud.LBSettings()))
	serveNodes(t, cloud, 30080)
	createNode(t, cluster.Client(), cloud, "node-a")
	killDuringApplies(t, cluster.Client(), workDir, func() *harness.CCM { return startCCM(t, cluster, cfg, "--leader-elect=false") })
}

// TestKill9DuringAppliesBaremetal is the same with the baremetal set: the
// lbhost provider holds SSH sessions to two LB hosts when it is orphaned.
func TestKill9DuringAppliesBaremetal(t *testing.T) {
	b := newBaremetal(t, "")
	serveNodes(t, b.cloud, 30080)
	createNode(t, b.client, b.cloud, "node-a")
	killDuringApplies(t, b.client, b.workDir, func() *harness.CCM {
		return startCCM(t, b.cluster, b.cfg, append([]string{"--leader-elect=false"}, routeFlags...)...)
	})
}

// killDuringApplies changes a Service's port 10 times and kills the CCM
// (start starts one; without leader election, so that the next starts at
// once) -9 at a random point of each apply, checking that nothing of the
// killed incarnation is left running under workDir.
func killDuringApplies(t *testing.T, client kubernetes.Interface, workDir string, start func() *harness.CCM) {
	seed := time.Now().UnixNano()
	if v := os.Getenv("TFCCM_KILL_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (TFCCM_KILL_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	ccm := start()
	createHTTPService(t, client, "web", 8000)
	vip := waitVIP(t, client, "web")
	backendsAre(t, vip, 8000, "node-a")

	// Ten kills; if none of them landed while a provider ran (the window
	// is short on a busy machine), up to six more aimed at providers.
	providerKills, last := 0, int32(8000)
	for i := 1; i <= 10 || providerKills == 0 && i <= 16; i++ {
		port := int32(8000 + i)
		last = port
		eventually(t, 30*time.Second, "Service port changed", func(ctx context.Context) error {
			s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Spec.Ports[0].Port = port
			_, err = client.CoreV1().Services("default").Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
		// A random point of the apply: any point once tofu runs, or (every
		// other time) a point while a provider runs.
		running := func(what string) bool {
			for _, p := range tofuOrProviders(workDir) {
				if strings.HasPrefix(filepath.Base(p.Args[0]), what) {
					return true
				}
			}
			return false
		}
		waitFor(30*time.Second, func() bool { return running("tofu") })
		delay := time.Duration(rng.Intn(1500)) * time.Millisecond
		if i%2 == 0 || i > 10 {
			waitFor(10*time.Second, func() bool { return running("terraform-provider-") })
			delay = time.Duration(rng.Intn(300)) * time.Millisecond
		}
		time.Sleep(delay)
		before := harness.ProcessesUnder(workDir)
		if running("terraform-provider-") {
			providerKills++
		}
		ccm.Kill()
		if !ccm.Exited() || syscall.Kill(ccm.PID(), 0) == nil {
			t.Fatalf("the CCM (pid %d) still runs", ccm.PID())
		}
		noneLeft(t, workDir, fmt.Sprintf("after kill %d (%s into the apply; running then: %v)", i, delay, before))
		ccm = start()
	}
	t.Logf("%d of %d kills landed while a provider ran", providerKills, last-8000)
	if providerKills == 0 {
		t.Error("no kill landed while a provider ran; the test proves little")
	}
	backendsAre(t, vip, int(last), "node-a")
	ccm.Stop()
	noneLeft(t, workDir, "after the CCM stopped")
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}
