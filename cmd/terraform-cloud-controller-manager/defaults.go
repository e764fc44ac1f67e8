package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm"
)

// Defaults are the CCM's own flag defaults where tfccm needs other values
// than the upstream command's: what the Helm chart passes, so that the
// binary run with only --cloud-config (and --kubeconfig outside a pod)
// behaves as the chart does. A test keeps them equal to the chart's args.
//
//   - cloud-provider: this binary serves only "terraform".
//   - concurrent-service-syncs: upstream's 1 serializes every Service on
//     EnsureLoadBalancer's wait for its apply (load_balancer.ensure_wait):
//     a burst of Services then takes twice as long as tofu alone.
//   - leader-elect-retry-period: a standby tries the Lease every retry
//     period times a jitter of up to 2.2; at 750ms a Lease released on
//     shutdown (handover.go) is taken within ~1.7 s instead of up to 4.4 s
//     (upstream's 2s). The leader renews as often: ~1.3 Lease writes a second.
//   - leader-elect-resource-name: tfccm's own Lease, not upstream's
//     cloud-controller-manager, which another CCM of the cluster may use in
//     the same namespace (kube-system by default). Upgrades from releases
//     that used the old name: previouslease.go.
//   - v: 2 logs every workspace run (plan, apply, destroy) and its result.
var Defaults = map[string]string{
	"cloud-provider":             ccm.ProviderName,
	"concurrent-service-syncs":   "10",
	"leader-elect-resource-name": annotations.LeaderLease,
	"leader-elect-retry-period":  "750ms",
	"v":                          "2",
}

// applyDefaults sets the flags' values and shown defaults before the
// command line is parsed; a flag given on the command line still wins.
func applyDefaults(fs *pflag.FlagSet) error {
	for name, v := range Defaults {
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("no flag --%s to default", name)
		}
		if err := f.Value.Set(v); err != nil {
			return fmt.Errorf("default --%s=%s: %w", name, v, err)
		}
		f.DefValue = v
	}
	return nil
}
