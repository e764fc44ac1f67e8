package localcloud

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestLoadBalancerBurst creates 30 load balancers at once on the local set,
// each its own tofu process (as the CCM's workers do under a burst of
// Services): VIPs are claimed by the lbhost provider at apply time under
// the cloud's lock, so every apply succeeds with a distinct VIP and every
// LB answers. (The terraform_data set read claims at plan time and failed
// applies under such bursts.)
func TestLoadBalancerBurst(t *testing.T) {
	const n = 30
	stop, err := shared.ServeHTTP("node-a", 30070, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	ws := make([]*workspace, n)
	for i := range ws {
		ws[i] = newWorkspace(t, "loadbalancer")
		ws[i].destroyOnCleanup()
		v := lbVars(fmt.Sprintf("burst%d", i), []port{{"TCP", 80, 30070}}, nil)
		v["nodes"] = v["nodes"].([]map[string]any)[:1]
		v["health_check"] = map[string]any{"protocol": "TCP", "port": 30070, "path": nil}
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(ws[i].dir, "tfccm.auto.tfvars.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = RunTofu(t.Context(), shared.Tofu, w.dir, "apply", "-auto-approve", "-input=false", "-no-color")
		}()
	}
	wg.Wait()
	t.Logf("%d load balancers applied at once in %s", n, time.Since(start).Round(time.Millisecond))
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("apply %d: %v", i, err)
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d applies failed", failed, n)
	}
	seen := map[string]int{}
	for i, w := range ws {
		vip := vipOf(w)
		if j, dup := seen[vip]; dup {
			t.Errorf("LBs %d and %d share VIP %s", j, i, vip)
		}
		seen[vip] = i
		if body, err := get("http://" + vip + "/"); err != nil || body != "node-a" {
			t.Errorf("LB %d at %s: %q %v", i, vip, body, err)
		}
	}
}
