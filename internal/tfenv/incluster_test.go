package tfenv

import "testing"

// TestInClusterPassed: tofu in a pod reaches the apiserver (the kubernetes
// backend's in_cluster_config) without listing these in pass_env, where
// they would count as secrets and be scrubbed from every message.
func TestInClusterPassed(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	env, secrets, err := Build(Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if env["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" || env["KUBERNETES_SERVICE_PORT"] != "443" {
		t.Errorf("in-cluster variables not passed: %v", env)
	}
	if len(secrets) != 0 {
		t.Errorf("in-cluster variables counted as secrets: %v", secrets)
	}
}
