// Package tfenv owns what tfccm hands every tofu process it starts besides a
// workspace's files. That is the one explicit environment (Build) — PATH,
// HOME, the configured credentials and CLI settings, and nothing else of the
// controller's environment, in particular no TF_VAR_*, TF_LOG or a stray
// TF_CLI_CONFIG_FILE — with the rule on which variable names the cloud
// config may set (CheckName), and the rule on backend type names
// (ValidBackendType). The cloud config, the workspace engine, the state
// sources and `tfccm unlock` all use these.
package tfenv

import (
	"fmt"
	"os"
	"sort"
	"strings"

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
	// Encryption is OpenTofu's encryption configuration (the body of a
	// terraform { encryption } block, secrets included), passed as
	// EncryptionVar; it is secret.
	Encryption string
	// EncryptionSecrets are the key values in Encryption, scrubbed from
	// anything tofu prints.
	EncryptionSecrets []string
	// PluginSocketDir, when set, is a directory only this user can enter
	// (PluginSocketDir makes one) where providers put their plugin
	// sockets (PLUGIN_UNIX_SOCKET_DIR): the caller then starts tofu
	// without go-plugin's automatic mTLS (terraform-exec's
	// SetDisablePluginTLS, which owns TF_DISABLE_PLUGIN_TLS), see
	// sockets.go.
	PluginSocketDir string
}

// EncryptionVar carries the encryption configuration to tofu: OpenTofu
// merges it into the configuration's encryption block, so key providers'
// secrets never need to be written into a file.
const EncryptionVar = "TF_ENCRYPTION"

// managed are the variables tfccm sets or controls itself (besides the
// prefixes CheckName refuses).
var managed = map[string]bool{
	"TF_IN_AUTOMATION": true, "TF_INPUT": true, "TF_WORKSPACE": true, "TF_APPEND_USER_AGENT": true,
	"TF_REATTACH_PROVIDERS": true, "TF_DISABLE_PLUGIN_TLS": true, "TF_SKIP_PROVIDER_VERIFY": true,
	"TF_CLI_CONFIG_FILE": true, "TF_PLUGIN_CACHE_DIR": true, "TF_DATA_DIR": true, EncryptionVar: true,
	SocketDirVar: true,
}

// CheckName refuses a variable name terraform.env or pass_env may not
// hold: an invalid name, one that would bypass the rendered inputs
// (TF_VAR_*, TF_CLI_ARGS*), or one tfccm or terraform-exec manages itself
// (TF_LOG*, TF_WORKSPACE, TF_CLI_CONFIG_FILE, ...).
func CheckName(k string) error {
	switch {
	case k == "" || strings.ContainsAny(k, "=\x00"):
		return fmt.Errorf("invalid variable name %q", k)
	case strings.HasPrefix(k, "TF_VAR_"), strings.HasPrefix(k, "TF_CLI_ARGS"):
		return fmt.Errorf("%s may not be set: template inputs come from the rendered workspace", k)
	case strings.HasPrefix(k, "TF_LOG"), managed[k], len(tfexec.ProhibitedEnv(map[string]string{k: ""})) > 0:
		return fmt.Errorf("%s is managed by tfccm and may not be set", k)
	}
	return nil
}

// ValidBackendType reports whether s can name a Terraform state backend:
// lowercase letters, digits and '_'. It is the one check of the cloud
// config's backend label, the engine's workspace spec and the rendered
// backend block.
func ValidBackendType(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return s != ""
}

// Build returns the environment and the secret values in it (longest first,
// so that scrubbing a secret that contains another redacts it whole). A
// variable CheckName refuses is an error.
func Build(s Settings) (env map[string]string, secrets []string, err error) {
	for k := range s.Env {
		if err := CheckName(k); err != nil {
			return nil, nil, fmt.Errorf("terraform.env: %w", err)
		}
	}
	for _, k := range s.PassEnv {
		if err := CheckName(k); err != nil {
			return nil, nil, fmt.Errorf("terraform.pass_env: %w", err)
		}
	}
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
	if s.PluginSocketDir != "" {
		env[SocketDirVar] = s.PluginSocketDir
	}
	if s.Encryption != "" {
		env[EncryptionVar] = s.Encryption
		secrets = append(append(secrets, s.Encryption), s.EncryptionSecrets...)
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	return env, secrets, nil
}

// Credentials are the configured credentials by variable name: Env and
// the PassEnv variables set in the process (the values Build counts as
// secrets, without the encryption configuration). The workspace engine
// hands them to templates that declare the ephemeral `credentials`
// variable.
func Credentials(s Settings) map[string]string {
	out := make(map[string]string, len(s.Env)+len(s.PassEnv))
	for _, k := range s.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			out[k] = v
		}
	}
	for k, v := range s.Env {
		out[k] = v
	}
	return out
}

// Workspace splits Build for the workspace engine: env is the environment
// without the credentials (Env and PassEnv), which a workspace gets only
// by name as its template declares them (tofu.CredentialsFile in package workspace/tofu);
// creds are those credentials (Credentials); secrets are all of Build's.
func Workspace(s Settings) (env, creds map[string]string, secrets []string, err error) {
	_, secrets, err = Build(s)
	if err != nil {
		return nil, nil, nil, err
	}
	base := s
	base.Env, base.PassEnv = nil, nil
	env, _, err = Build(base)
	if err != nil {
		return nil, nil, nil, err
	}
	return env, Credentials(s), secrets, nil
}
