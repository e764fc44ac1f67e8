package workspace

import "os"

// defaultPath is used when the controller runs without PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildEnv is the complete environment of every tofu process: nothing else
// from the controller's environment leaks in (in particular no TF_VAR_*).
// It also returns the secret values to scrub from messages.
func buildEnv(o *Options) (env map[string]string, secrets []string) {
	env = map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               os.Getenv("HOME"),
		"CHECKPOINT_DISABLE": "1",
	}
	if env["PATH"] == "" {
		env["PATH"] = defaultPath
	}
	if env["HOME"] == "" {
		env["HOME"] = o.WorkDir
	}
	for _, k := range o.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
			secrets = append(secrets, v)
		}
	}
	for k, v := range o.Env {
		env[k] = v
		secrets = append(secrets, v)
	}
	if o.CLIConfigFile != "" {
		env["TF_CLI_CONFIG_FILE"] = o.CLIConfigFile
	}
	if o.PluginCacheDir != "" {
		env["TF_PLUGIN_CACHE_DIR"] = o.PluginCacheDir
	}
	return env, secrets
}
