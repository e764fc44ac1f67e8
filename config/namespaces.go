package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// The namespaces tfccm writes Secrets into, and the one it must never use
// for them: the admin's side of the trust boundary (docs/security.md).

// SystemNamespace holds the cluster's own Secrets (bootstrap tokens,
// controllers' credentials, the extension apiserver's CA): neither the
// state backend nor the job runner may keep theirs there.
const SystemNamespace = "kube-system"

// BackendNamespace is the namespace of the kubernetes backend's state
// Secrets and lock Leases; "" for any other backend.
func (c *Config) BackendNamespace() string {
	if c.Backend == nil || c.Backend.Type != "kubernetes" {
		return ""
	}
	if v, ok := c.Backend.Attributes["namespace"]; ok && v.IsKnown() && !v.IsNull() && v.Type() == cty.String {
		return v.AsString()
	}
	return kubernetesBackendDefaultNamespace
}

// finishNamespaces refuses kube-system for the state backend and the job
// runner, and a runner namespace shared with the state: runner pods read
// every state Secret (the backend lists them), so the runners' input
// Secrets (credentials) must live elsewhere.
func (c *Config) finishNamespaces(k *checker) {
	state := c.BackendNamespace()
	if state == SystemNamespace {
		k.diags = append(k.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "State in kube-system",
			Detail:  `backend "kubernetes" namespace = "kube-system": whoever reads the state Secrets (tfccm, runner pods) could then read the cluster's own Secrets beside them (bootstrap tokens, controllers' credentials). Give the state a namespace of its own, e.g. "tfccm-state" (the Helm chart's default is <release>-state).`,
			Subject: c.backendRange(k)})
	}
	if c.Terraform.Runner != RunnerJob {
		return
	}
	switch j := c.Terraform.Job; {
	case j.Namespace == SystemNamespace:
		k.errAt(at("terraform", "job", "namespace"), "Runner Jobs in kube-system",
			fmt.Sprintf(`terraform.job.namespace = "kube-system": runner pods may create Secrets in their namespace and tfccm reads Secrets and starts Jobs there, which in kube-system reaches the cluster's own ServiceAccounts and Secrets. Give the runners a namespace of their own, e.g. %q (the default; the Helm chart's is <release>-runners).`, DefaultJobNamespace))
	case j.Namespace == state:
		k.errAt(at("terraform", "job", "namespace"), "Runner Jobs in the state namespace",
			fmt.Sprintf(`terraform.job.namespace %q is the kubernetes backend's namespace: runner pods may read every Secret there (the backend lists the state Secrets), the other runs' input Secrets with their credentials included. Give the runners a namespace of their own, e.g. %q.`, j.Namespace, DefaultJobNamespace))
	}
}

// backendRange is the range of the backend's namespace attribute, else of
// its block.
func (c *Config) backendRange(k *checker) *hcl.Range {
	if attrs, diags := c.Backend.Body.JustAttributes(); !diags.HasErrors() {
		if a, ok := attrs["namespace"]; ok {
			return a.Expr.Range().Ptr()
		}
	}
	if c.Backend.Range.Filename != "" {
		return c.Backend.Range.Ptr()
	}
	return k.body.MissingItemRange().Ptr()
}
