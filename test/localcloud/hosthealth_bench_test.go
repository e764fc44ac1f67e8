package localcloud

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
)

// benchParallelism and benchInterval are tfccm's defaults
// (terraform.parallelism, load_balancer.health_interval): the run budget
// of one health interval is parallelism × interval of tofu slot time.
const (
	benchParallelism = 4
	benchInterval    = 30 * time.Second
)

// TestHostHealthBench (make bench; TFCCM_BENCH_HOSTHEALTH=N load
// balancers) measures one health interval's reads on the local set with
// N HAProxy frontends in the cloud namespace (created by one apply of N
// lbhost_frontend): before, one refresh of the local set's health module
// per load balancer, benchParallelism at a time (what tfccm's health round
// ran); after, one refresh of the set's hosts health module for all N. It
// reports the tofu runs and wall time of each and their share of the run
// budget, and fails when the hosts read takes more than 5% of it or does
// not answer for every load balancer. TFCCM_BENCH_HOSTHEALTH_PERLB=M reads
// only M load balancers one by one and scales their time to N.
func TestHostHealthBench(t *testing.T) {
	n := harness.BenchCount(t, "TFCCM_BENCH_HOSTHEALTH", "TFCCM_BENCH_HOSTHEALTH=N runs the hosts health benchmark (make bench)")
	perLB := n
	if m, err := strconv.Atoi(os.Getenv("TFCCM_BENCH_HOSTHEALTH_PERLB")); err == nil && m > 0 && m < n {
		perLB = m
	}
	ctx := context.Background()
	tofu := repo.Tofu(t)
	c := ForTest(t, Options{})
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	settings := fmt.Sprintf("{ state_dir = %q, cloud_netns = %q }", c.StateDir, c.CloudNetns)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("lb%05d", i)
	}

	// N frontends on one VIP, one port each, in one apply.
	infra := t.TempDir()
	writeFile(t, filepath.Join(infra, "main.tf"), fmt.Sprintf(`terraform {
  required_providers {
    lbhost = { source = "tfccm/lbhost" }
  }
}
provider "lbhost" {
  netns      = %q
  config_dir = %q
}
resource "lbhost_vip" "vip" {
  owner = "bench_vip"
  pool  = %q
}
resource "lbhost_frontend" "lb" {
  for_each = { for i in range(%d) : format("lb%%05d", i) => i }
  name     = "bench_${each.key}"
  address  = lbhost_vip.vip.address
  ports    = [{ port = 20000 + each.value, node_port = 30080 }]
  backends = [{ name = "node-a", address = %q }, { name = "node-b", address = %q }]
  health_check = { protocol = "TCP", port = 30080, interval = "30s", rise = 1, fall = 1 }
}
`, c.CloudNetns, c.StateDir, c.VIPPool, n, c.Node("node-a").Address, c.Node("node-b").Address))
	start := time.Now()
	runTofu(t, tofu, infra, "init", "-input=false", "-no-color")
	runTofu(t, tofu, infra, "apply", "-auto-approve", "-input=false", "-no-color", "-parallelism=20")
	t.Logf("HOSTHEALTH: %d frontends created in %s", n, time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		_, _ = RunTofu(ctx, tofu, infra, "destroy", "-auto-approve", "-input=false", "-no-color", "-parallelism=20")
	})

	// Before: each load balancer's own health module, one refresh each.
	shared := t.TempDir()
	if err := CopyModule(filepath.Join(root, "templates", "local", "loadbalancer", "health"), shared); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(shared, "tfccm.auto.tfvars"), lbInputs(ids[0], settings))
	runTofu(t, tofu, shared, "init", "-input=false", "-no-color")
	dirs := make([]string, perLB)
	for i := range dirs {
		dirs[i] = t.TempDir()
		if err := CopyModule(shared, dirs[i]); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(shared, ".terraform"), filepath.Join(dirs[i], ".terraform")); err != nil {
			t.Fatal(err)
		}
		lock, err := os.ReadFile(filepath.Join(shared, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dirs[i], ".terraform.lock.hcl"), string(lock))
		writeFile(t, filepath.Join(dirs[i], "tfccm.auto.tfvars"), lbInputs(ids[i], settings))
	}
	start = time.Now()
	parallel(perLB, benchParallelism, func(i int) {
		out, err := refresh(tofu, dirs[i])
		if err != nil {
			t.Error(err)
			return
		}
		if !strings.Contains(out, `"node-a"`) {
			t.Errorf("%s: health module output %s has no node-a", ids[i], out)
		}
	})
	before := time.Since(start)
	scaled := time.Duration(float64(before) * float64(n) / float64(perLB))
	note := ""
	if perLB < n {
		note = fmt.Sprintf(" (%d read, %s, scaled to %d)", perLB, before.Round(time.Millisecond), n)
	}

	// After: the set's hosts health module, one refresh for all.
	hosts := t.TempDir()
	if err := CopyModule(filepath.Join(root, "templates", "local", "hosthealth"), hosts); err != nil {
		t.Fatal(err)
	}
	var entries strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&entries, "  %s = { module = \"loadbalancer\", service = { ip_families = [\"IPv4\"] } }\n", id)
	}
	writeFile(t, filepath.Join(hosts, "tfccm.auto.tfvars"), fmt.Sprintf("cluster_name = \"bench\"\nsettings = %s\nload_balancers = {\n%s}\n", settings, entries.String()))
	runTofu(t, tofu, hosts, "init", "-input=false", "-no-color")
	start = time.Now()
	out, err := refresh(tofu, hosts)
	after := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, `"node-a"`); got != n {
		t.Errorf("the hosts health module answered node-a for %d load balancers, want %d", got, n)
	}
	budget := float64(benchParallelism) * benchInterval.Seconds()
	t.Logf("HOSTHEALTH: %d load balancers, one interval (%s x %d slots = %.0f slot-seconds): per load balancer %d tofu runs in %s%s = %.1f%% of the budget; hosts health module 1 tofu run in %s = %.2f%% (%.0fx less slot time)",
		n, benchInterval, benchParallelism, budget, n, scaled.Round(time.Millisecond), note,
		100*scaled.Seconds()*benchParallelism/budget, after.Round(time.Millisecond), 100*after.Seconds()/budget,
		scaled.Seconds()*benchParallelism/after.Seconds())
	if share := after.Seconds() / budget; share > 0.05 {
		t.Errorf("the hosts health read takes %.1f%% of the run budget, want <= 5%%", 100*share)
	}
}

func lbInputs(id, settings string) string {
	return fmt.Sprintf("cluster_name = \"bench\"\nload_balancer_id = %q\nservice = { ip_families = [\"IPv4\"] }\nsettings = %s\n", id, settings)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func runTofu(t *testing.T, tofu, dir string, args ...string) {
	t.Helper()
	if out, err := RunTofu(context.Background(), tofu, dir, args...); err != nil {
		t.Fatalf("tofu %s in %s: %v\n%s", args[0], dir, err, out)
	}
}

// refresh reads a probe module as tfccm does (one refresh-only apply, no
// lock) and returns `tofu output -json`.
func refresh(tofu, dir string) (string, error) {
	ctx := context.Background()
	if out, err := RunTofu(ctx, tofu, dir, "apply", "-refresh-only", "-auto-approve", "-lock=false", "-input=false", "-no-color"); err != nil {
		return "", fmt.Errorf("refresh %s: %w\n%s", dir, err, out)
	}
	out, err := RunTofu(ctx, tofu, dir, "output", "-json")
	if err != nil {
		return "", fmt.Errorf("tofu output in %s: %w\n%s", dir, err, out)
	}
	_ = os.Remove(filepath.Join(dir, "terraform.tfstate"))
	return string(out), nil
}

func parallel(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
