package workspace

// The conversion of the cloud config into the engine's Options: the one
// place that says which settings of config.Config shape the engine.

import "github.com/tfccm/tfccm/config"

// OptionsFor is the Options every setting of cfg that shapes the engine
// gives: the tofu binary and its environment, the work dir, parallelism,
// timeouts, drift checks, coalescing, encryption, review mode and the
// identity in claim files. What is not configuration (the result hooks,
// the catalog, the gate, the plan store, GoneLockHolder and Exec) is left
// for the caller to set.
func OptionsFor(cfg *config.Config) Options {
	t := cfg.Terraform
	o := Options{
		Binary:           t.Binary,
		WorkDir:          cfg.WorkDir,
		Parallelism:      t.Parallelism,
		Timeout:          t.Timeout,
		DriftInterval:    t.DriftInterval,
		Coalesce:         Coalesce{Quiet: t.CoalesceQuiet, Max: t.CoalesceMax},
		Env:              t.Env,
		PassEnv:          t.PassEnv,
		CLIConfigFile:    t.CLIConfigFile,
		ProviderLockFile: t.ProviderLockFile,
		PluginCacheDir:   t.PluginCacheDir,
		ProviderMTLS:     t.ProviderMTLS,
		// One identity per cluster: the leader-elected replica that runs
		// after a crash recognises the previous one's stale state locks
		// (given a persistent work_dir, where the claims live).
		Identity: cfg.Identity(),
		Review:   t.Review,
	}
	if e := cfg.Encryption; e != nil {
		o.Encryption, o.EncryptionSecrets = e.Source, e.Secrets
	}
	return o
}
