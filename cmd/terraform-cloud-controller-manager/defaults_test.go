package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cloud-provider/options"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
)

// command builds the command as main does.
func command(t *testing.T) (*cobra.Command, *options.CloudControllerManagerOptions) {
	t.Helper()
	o, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	cmd := newCommand(o, &handover{stopping: make(chan struct{})})
	if err := applyDefaults(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

// parsed builds the command and parses args.
func parsed(t *testing.T, args ...string) *options.CloudControllerManagerOptions {
	t.Helper()
	cmd, o := command(t)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestDefaults: run with only --cloud-config, the CCM serves tfccm's
// provider with ten service workers; flags on the command line still win.
func TestDefaults(t *testing.T) {
	o := parsed(t, "--cloud-config=/etc/tfccm/cloud.hcl")
	if got := o.ServiceController.ConcurrentServiceSyncs; got != 10 {
		t.Errorf("concurrent service syncs %d, want 10", got)
	}
	if got := o.KubeCloudShared.CloudProvider.Name; got != ccm.ProviderName {
		t.Errorf("cloud provider %q, want %q", got, ccm.ProviderName)
	}
	if !o.Generic.LeaderElection.LeaderElect || o.KubeCloudShared.UseServiceAccountCredentials {
		t.Errorf("leader-elect %v, use-service-account-credentials %v", o.Generic.LeaderElection.LeaderElect, o.KubeCloudShared.UseServiceAccountCredentials)
	}
	o = parsed(t, "--concurrent-service-syncs=3")
	if got := o.ServiceController.ConcurrentServiceSyncs; got != 3 {
		t.Errorf("--concurrent-service-syncs=3 gives %d", got)
	}
}

// chartArgs are the CCM's arguments in the chart rendered with its
// default test values and helmArgs.
func chartArgs(t *testing.T, helmArgs ...string) []string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm not found at %s: run `make tools`", helm)
	}
	args := append([]string{"template", "tfccm", filepath.Join(root, deploy.Chart), "--namespace", "kube-system",
		"--values", filepath.Join(root, "deploy", "testdata", "helm", "default.values.yaml")}, helmArgs...)
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := deploy.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			return d.Spec.Template.Spec.Containers[0].Args
		}
	}
	t.Fatal("no Deployment in the chart")
	return nil
}

// TestChartArgsAreDefaults: every flag the chart passes with its default
// values (except the paths it mounts) is the binary's default, so the
// README's command line and the chart run the same CCM.
func TestChartArgsAreDefaults(t *testing.T) {
	args := chartArgs(t)
	if len(args) < 5 {
		t.Fatalf("chart args: %v", args)
	}
	cmd, _ := command(t)
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || name == "cloud-config" {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Errorf("the chart passes %s, which the CCM does not have", a)
			continue
		}
		if f.DefValue != value {
			t.Errorf("the chart passes %s; the binary's default is %s (set it in Defaults)", a, f.DefValue)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--"+previousLeaseFlag) }) {
		t.Errorf("a fresh install guards the previous Lease (another CCM's, maybe): %v", args)
	}
}

// TestChartUpgradeGuardsPreviousLease: rendered for `helm upgrade`, the
// chart has the new leader wait for (and hold) the Lease earlier releases
// led through, a flag the CCM has; the Lease the CCM leads through is
// tfccm's own, not upstream's default.
func TestChartUpgradeGuardsPreviousLease(t *testing.T) {
	args := chartArgs(t, "--is-upgrade")
	want := "--" + previousLeaseFlag + "=" + annotations.PreviousLeaderLease
	if !slices.Contains(args, want) {
		t.Errorf("upgrade args lack %s: %v", want, args)
	}
	o := parsed(t, want)
	if o.Generic.LeaderElection.ResourceName != annotations.LeaderLease || o.Generic.LeaderElection.ResourceName == annotations.PreviousLeaderLease {
		t.Errorf("leader Lease %q, want tfccm's own %q", o.Generic.LeaderElection.ResourceName, annotations.LeaderLease)
	}
	if off := chartArgs(t, "--is-upgrade", "--set", "leaderElection.previousLeaseName="); slices.ContainsFunc(off, func(a string) bool { return strings.HasPrefix(a, "--"+previousLeaseFlag) }) {
		t.Errorf("previousLeaseName=\"\" still guards: %v", off)
	}
}
