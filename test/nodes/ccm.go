package nodes

import (
	"fmt"

	"github.com/tfccm/tfccm/test/harness"
)

// CCMFlags are tfccm's flags as the CCM of real nodes: it routes the
// nodes' pod ranges in the cloud. kube-controller-manager allocates them:
// k8s.io/cloud-provider v0.36 has no IPAM controller, so tfccm's
// --allocate-node-cidrs would change nothing (only --configure-cloud-routes
// and --cluster-cidr matter to its route controller).
var CCMFlags = []string{"--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes=true",
	"--route-reconciliation-period=5s", "--concurrent-service-syncs=4"}

// CCMConfig is tfccm's --cloud-config for the cluster c: the built-in local
// template set with state under workDir, the cloud's load-balancer and
// routes settings, and the cloud's infra workspace as the instance
// inventory. lbhostRC is the CLI config installing the lbhost provider
// (bin/lbhost.tfrc); overrideDir, when set, layers per-cluster modules over
// the set (override_dir).
func CCMConfig(c *Cluster, name, workDir, tofu, lbhostRC, overrideDir string) harness.CloudConfig {
	blocks := harness.Block("load_balancer", c.Cloud.LBSettings()) +
		"routes {\n  batch_window = \"1s\"\n  settings = " + harness.HCLObject(c.Cloud.RoutesSettings()) + "\n}\n" +
		fmt.Sprintf("instances {\n  ttl = \"5s\"\n  source \"infra\" {\n    dir = %q\n  }\n}\n", c.Cloud.InfraDir())
	if overrideDir != "" {
		blocks = fmt.Sprintf("override_dir = %q\n", overrideDir) + blocks
	}
	return harness.CloudConfig{
		ClusterName: name,
		WorkDir:     workDir,
		TemplateSet: "local",
		Tofu:        tofu,
		Terraform:   []string{fmt.Sprintf("cli_config_file = %q", lbhostRC)},
		Blocks:      blocks,
	}
}
