// Package tfenv builds the one explicit environment every tofu process tfccm
// starts runs with (the workspace engine's and the state sources'): PATH,
// HOME, the configured credentials and CLI settings, and nothing else of the
// controller's environment — in particular no TF_VAR_*, TF_LOG or a stray
// TF_CLI_CONFIG_FILE.
package tfenv

import (
	"fmt"
	"os"
	"sort"

	"github.com/hashicorp/terraform-exec/tfexec"
)

// defaultPath is used when the controller runs without PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// inCluster are the variables a pod's in-cluster Kubernetes clients need.
var inCluster = []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}

// Settings are the cloud config's terraform settings that shape the
// environment.
type Settings struct {
	// Env is set as is; its values are secret.
	Env map[string]string
	// PassEnv names process variables passed through; their values are secret.
	PassEnv []string
	// CLIConfigFile and PluginCacheDir become TF_CLI_CONFIG_FILE and
	// TF_PLUGIN_CACHE_DIR when set.
	CLIConfigFile, PluginCacheDir string
	// Home is HOME when the process has none.
	Home string
}

// Build returns the environment and the secret values in it (longest first,
// so that scrubbing a secret that contains another redacts it whole). A
// variable terraform-exec manages itself (TF_VAR_*, TF_LOG, ...) is an error.
func Build(s Settings) (env map[string]string, secrets []string, err error) {
	env = map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               os.Getenv("HOME"),
		"CHECKPOINT_DISABLE": "1",
	}
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	if env["HOME"] == "" {
		env["HOME"] = s.Home
	}
	// In a pod, the kubernetes state backend (in_cluster_config) finds the
	// apiserver the way client-go does, by these two; they are not secret.
	for _, k := range inCluster {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for _, k := range s.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
			secrets = append(secrets, v)
		}
	}
	for k, v := range s.Env {
		env[k] = v
		secrets = append(secrets, v)
	}
	if s.CLIConfigFile != "" {
		env["TF_CLI_CONFIG_FILE"] = s.CLIConfigFile
	}
	if s.PluginCacheDir != "" {
		env["TF_PLUGIN_CACHE_DIR"] = s.PluginCacheDir
	}
	if bad := tfexec.ProhibitedEnv(env); len(bad) > 0 {
		sort.Strings(bad)
		return nil, nil, fmt.Errorf("environment variable %s is managed by tfccm and may not be set in terraform.env or pass_env", bad[0])
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	return env, secrets, nil
}
