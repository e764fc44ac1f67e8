package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/devcluster"
	"github.com/tfccm/tfccm/workspace/backends"
	"github.com/tfccm/tfccm/workspace/locks"
	"github.com/tfccm/tfccm/workspace/tofu"
)

func kubernetesBackendFile(suffix, kubeconfig string) []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body().AppendNewBlock("terraform", nil).Body().AppendNewBlock("backend", []string{"kubernetes"}).Body()
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.SetAttributeValue(kv.k, kv.v)
	}
	return f.Bytes()
}

type attr struct {
	k string
	v cty.Value
}

func kubernetesAttrs(suffix, kubeconfig string) []attr {
	return []attr{{"secret_suffix", cty.StringVal(suffix)}, {"config_path", cty.StringVal(kubeconfig)}, {"namespace", cty.StringVal("default")}}
}

func kubernetesBackendInfo(suffix, kubeconfig string) backends.Info {
	b := backends.Info{Type: "kubernetes", Attributes: map[string]cty.Value{}}
	for _, kv := range kubernetesAttrs(suffix, kubeconfig) {
		b.Attributes[kv.k] = kv.v
	}
	return b
}

func TestKubernetesBackend(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	work := t.TempDir()

	// A controller dies mid-apply: the kubernetes backend's Lease stays.
	killMidApply(t, work, c.Kubeconfig())
	lease, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock-tfstate-default-crash", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no lock Lease after the kill: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatal("the killed apply's lock is not held; the test proves nothing")
	}

	// The next incarnation recognises its own stale lock and finishes.
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work})
	spec := crashSpec(c.Kubeconfig())
	if _, err := e.Apply(spec); err != nil {
		t.Fatal(err)
	}
	st := waitApplied(t, e, spec)
	if string(st.Outputs["value"]) != "1" || string(st.Outputs["password"]) != string(SensitiveValue) {
		t.Fatalf("outputs through the kubernetes backend: %v", st.Outputs)
	}
	if n := count(calls(), "force-unlock"); n != 1 {
		t.Fatalf("force-unlock ran %d times, want 1 (calls %v)", n, calls())
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-crash", metav1.GetOptions{}); err != nil {
		t.Fatalf("state Secret: %v", err)
	}

	// Destroy removes resources, the state Secret and the Lease.
	if _, err := e.Destroy(spec); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if st, err := e.Wait(wctx, spec.Name, spec.ContentHash()); err != nil || st.Phase != PhaseDestroyed {
		t.Fatalf("destroy: %+v, %v", st, err)
	}
	if _, err := kube.CoreV1().Secrets("default").Get(ctx, "tfstate-default-crash", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("state Secret after destroy: %v", err)
	}
	if _, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock-tfstate-default-crash", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("lock Lease after destroy: %v", err)
	}
}

// holdLease makes the kubernetes backend's lock Lease for suffix look
// held by who, for operation op, since created.
func holdLease(t *testing.T, kube kubernetes.Interface, suffix, id, op, who string, created time.Time) {
	t.Helper()
	info, err := json.Marshal(map[string]string{"ID": id, "Operation": op, "Info": "", "Who": who, "Version": "1.12.6", "Created": created.UTC().Format(time.RFC3339Nano), "Path": ""})
	if err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lock-tfstate-default-" + suffix, Namespace: "default",
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "terraform", "tfstate": "true", "tfstateSecretSuffix": suffix, "tfstateWorkspace": "default"},
			Annotations: map[string]string{"app.terraform.io/lock-info": string(info)}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &id},
	}
	leases := kube.CoordinationV1().Leases("default")
	if cur, err := leases.Get(context.Background(), lease.Name, metav1.GetOptions{}); err == nil {
		cur.Annotations, cur.Spec.HolderIdentity = lease.Annotations, lease.Spec.HolderIdentity
		if _, err := leases.Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := leases.Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deadPID is the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestStaleInitLockIsReleased: a controller killed while `tofu init` held
// the kubernetes backend's lock (init creates the first, empty state under
// it) leaves a Lease that the next incarnation recognises as its own from
// the claim and releases; a lock held by anyone else is reported with
// holder, operation, lock ID and age, and kept.
func TestStaleInitLockIsReleased(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	work := t.TempDir()
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, WorkDir: work, Identity: "tfccm/test"})

	// Ours: the claim of a dead process of this identity names the lock.
	ours := testSpec("initlock", 1, 0)
	ours.Files["backend.tf"] = kubernetesBackendFile("initlock", c.Kubeconfig())
	ours.Backend = kubernetesBackendInfo("initlock", c.Kubeconfig())
	started := time.Now().Add(-10 * time.Second)
	holdLease(t, kube, "initlock", "11111111-aaaa", "OperationTypeInit", locks.TofuWho(), started.Add(time.Second))
	cl := locks.SelfClaim("tfccm/test", "apply")
	cl.PID, cl.PIDStart, cl.Started = deadPID(t), 0, started
	if err := os.MkdirAll(filepath.Join(e.Dir("initlock"), metaDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := locks.WriteClaim(e.Dir("initlock"), cl); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Apply(ours); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, ours)
	if n := count(calls(), "force-unlock"); n != 1 {
		t.Fatalf("force-unlock ran %d times, want 1 (calls %v)", n, calls())
	}

	// Someone else's: reported, not stolen.
	theirs := testSpec("otherlock", 1, 0)
	theirs.Files["backend.tf"] = kubernetesBackendFile("otherlock", c.Kubeconfig())
	theirs.Backend = kubernetesBackendInfo("otherlock", c.Kubeconfig())
	holdLease(t, kube, "otherlock", "22222222-bbbb", "OperationTypeInit", "alice@laptop", time.Now().Add(-time.Minute))
	if _, err := e.Apply(theirs); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := e.Wait(wctx, theirs.Name, theirs.ContentHash())
	if !errors.Is(err, tofu.ErrLocked) {
		t.Fatalf("Wait = %v; want tofu.ErrLocked", err)
	}
	for _, want := range []string{"alice@laptop", "(Init)", "22222222-bbbb", " ago)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("lock error %q lacks %q", err, want)
		}
	}
	lease, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock-tfstate-default-otherlock", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "22222222-bbbb" {
		t.Fatalf("someone else's lock was touched: %v %+v", err, lease)
	}
}

// TestInspectLockAndForceUnlock: what `tfccm unlock` decides. A lock whose
// claim is a dead tfccm process of this identity on this host is stale;
// one claimed by a live process is ours but not stale; anyone else's is
// neither. ForceUnlock releases the Lease and the claim.
func TestInspectLockAndForceUnlock(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	work := t.TempDir()
	e := newTestEngine(t, Options{WorkDir: work, Identity: "tfccm/test"})
	opts := UnlockOptions{Binary: repo.Tofu(t), Identity: "tfccm/test"}
	for _, tc := range []struct {
		name, who     string
		claimPID      int
		ours, stale   bool
		whyContaining string
	}{
		{"dead tfccm process", locks.TofuWho(), deadPID(t), true, true, "has exited"},
		{"live tfccm process", locks.TofuWho(), os.Getpid(), true, false, "still running"},
		{"someone else", "alice@laptop", deadPID(t), false, false, "someone else"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suffix := "inspect-" + strings.ReplaceAll(tc.name, " ", "-")
			spec := testSpec(suffix, 1, 0)
			spec.Files["backend.tf"] = kubernetesBackendFile(suffix, c.Kubeconfig())
			spec.Backend = kubernetesBackendInfo(suffix, c.Kubeconfig())
			if _, err := e.Apply(spec); err != nil {
				t.Fatal(err)
			}
			waitApplied(t, e, spec)
			dir := e.Dir(suffix)
			if l, err := InspectLock(ctx, opts, &spec, dir); err != nil || l.Held {
				t.Fatalf("unlocked workspace: %+v, %v", l, err)
			}
			holdLease(t, kube, suffix, "33333333-"+suffix, "OperationTypeApply", tc.who, time.Now().Add(-time.Minute))
			cl := locks.SelfClaim("tfccm/test", "apply")
			cl.PID, cl.PIDStart, cl.Started = tc.claimPID, locks.ProcStart(tc.claimPID), time.Now().Add(-2*time.Minute)
			if err := locks.WriteClaim(dir, cl); err != nil {
				t.Fatal(err)
			}
			l, err := InspectLock(ctx, opts, &spec, dir)
			if err != nil || !l.Held || l.ID != "33333333-"+suffix || l.Who != tc.who {
				t.Fatalf("InspectLock = %+v, %v", l, err)
			}
			if l.Ours != tc.ours || l.Stale != tc.stale || !strings.Contains(l.Why, tc.whyContaining) {
				t.Fatalf("InspectLock = ours %v stale %v (%s); want %v %v (%s)", l.Ours, l.Stale, l.Why, tc.ours, tc.stale, tc.whyContaining)
			}
			if err := ForceUnlock(ctx, opts, &spec, dir, l.ID); err != nil {
				t.Fatal(err)
			}
			if l, err := InspectLock(ctx, opts, &spec, dir); err != nil || l.Held {
				t.Fatalf("after ForceUnlock: %+v, %v", l, err)
			}
			if _, ok := locks.ReadClaim(dir); ok {
				t.Error("claim left after ForceUnlock")
			}
		})
	}
}

// TestPreviousLeaderLockIsReleased: without a persistent work_dir no claim
// survives a pod; a lock whose holder is an earlier incarnation known to
// be gone (GoneLockHolder: a previous leader) is released by the new one,
// any other holder's is reported.
func TestPreviousLeaderLockIsReleased(t *testing.T) {
	c := devcluster.ForTest(t)
	kube := c.Client()
	ctx := context.Background()
	gone := map[string]bool{"root@tfccm-old-pod": true}
	bin, calls := countingBinary(t)
	e := newTestEngine(t, Options{Binary: bin, GoneLockHolder: func(who string) bool { return gone[who] }})

	prev := testSpec("prevleader", 1, 0)
	prev.Files["backend.tf"] = kubernetesBackendFile("prevleader", c.Kubeconfig())
	prev.Backend = kubernetesBackendInfo("prevleader", c.Kubeconfig())
	holdLease(t, kube, "prevleader", "55555555-dddd", "OperationTypeApply", "root@tfccm-old-pod", time.Now().Add(-30*time.Second))
	if _, err := e.Apply(prev); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, e, prev)
	if n := count(calls(), "force-unlock"); n != 1 {
		t.Fatalf("force-unlock ran %d times, want 1", n)
	}

	other := testSpec("stranger", 1, 0)
	other.Files["backend.tf"] = kubernetesBackendFile("stranger", c.Kubeconfig())
	other.Backend = kubernetesBackendInfo("stranger", c.Kubeconfig())
	holdLease(t, kube, "stranger", "66666666-eeee", "OperationTypeApply", "root@some-laptop", time.Now().Add(-30*time.Second))
	if _, err := e.Apply(other); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := e.Wait(wctx, other.Name, other.ContentHash()); !errors.Is(err, tofu.ErrLocked) {
		t.Fatalf("a stranger's lock: %v, want tofu.ErrLocked", err)
	}
}

// testKubeconfig writes a kubeconfig of two contexts (no server behind
// them: building a client does not connect) and returns its path.
