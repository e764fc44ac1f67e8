package config

import (
	"fmt"
	"time"
)

// duration is one duration setting: decoded as a string (its *Raw field),
// parsed into its time.Duration field.
type duration struct {
	block, name string // e.g. "terraform", "timeout"
	raw         func(*Config) string
	dst         func(*Config) *time.Duration
	def         time.Duration
	zero        bool   // "0s" is allowed (it turns the feature off)
	max         string // the largest value allowed, "" for none
	example     string // a valid value for the message
	note        string // appended to the message's example
}

// durations are every duration setting, in the order they are checked.
var durations = []duration{
	{"terraform", "timeout", func(c *Config) string { return c.Terraform.TimeoutRaw },
		func(c *Config) *time.Duration { return &c.Terraform.Timeout }, DefaultOperationTimeout, false, "", "10m", ""},
	{"terraform", "drift_interval", func(c *Config) string { return c.Terraform.DriftIntervalRaw },
		func(c *Config) *time.Duration { return &c.Terraform.DriftInterval }, DefaultDriftInterval, true, "", "1h", ` ("0" turns drift repair off)`},
	{"terraform", "coalesce_quiet", func(c *Config) string { return c.Terraform.CoalesceQuietRaw },
		func(c *Config) *time.Duration { return &c.Terraform.CoalesceQuiet }, DefaultCoalesceQuiet, true, "10m", "", ""},
	{"terraform", "coalesce_max", func(c *Config) string { return c.Terraform.CoalesceMaxRaw },
		func(c *Config) *time.Duration { return &c.Terraform.CoalesceMax }, DefaultCoalesceMax, true, "10m", "", ""},
	{"load_balancer", "ensure_wait", func(c *Config) string { return c.LoadBalancer.EnsureWaitRaw },
		func(c *Config) *time.Duration { return &c.LoadBalancer.EnsureWait }, DefaultEnsureWait, true, "2h", "15m", ""},
	{"load_balancer", "health_interval", func(c *Config) string { return c.LoadBalancer.HealthIntervalRaw },
		func(c *Config) *time.Duration { return &c.LoadBalancer.HealthInterval }, DefaultHealthInterval, true, "", "30s", ` ("0s" turns it off)`},
	{"routes", "batch_window", func(c *Config) string { return c.Routes.BatchWindowRaw },
		func(c *Config) *time.Duration { return &c.Routes.BatchWindow }, DefaultBatchWindow, true, "", "2s", ""},
	{"instances", "ttl", func(c *Config) string { return c.Instances.TTLRaw },
		func(c *Config) *time.Duration { return &c.Instances.TTL }, DefaultStateTTL, false, "", "30s", ""},
	{"instances", "max_staleness", func(c *Config) string { return c.Instances.MaxStalenessRaw },
		func(c *Config) *time.Duration { return &c.Instances.MaxStaleness }, DefaultStateMaxStaleness, false, "", "30s", ""},
}

// parse returns the setting's value (its default when unset) and whether
// raw is valid.
func (d duration) parse(raw string) (time.Duration, bool) {
	if raw == "" {
		return d.def, true
	}
	v, err := time.ParseDuration(raw)
	maxD, _ := time.ParseDuration(d.max)
	if err == nil && (v > 0 || v == 0 && d.zero) && (d.max == "" || v <= maxD) {
		return v, true
	}
	return d.def, false
}

// invalid says what the setting allows, for the diagnostic of a bad raw.
func (d duration) invalid(raw string) string {
	switch {
	case d.max != "":
		return fmt.Sprintf("%s.%s must be a Go duration from \"0s\" to %q, got %q.", d.block, d.name, d.max, raw)
	case d.zero:
		return fmt.Sprintf("%s.%s must be a Go duration such as %q%s, got %q.", d.block, d.name, d.example, d.note, raw)
	default:
		return fmt.Sprintf("%s.%s must be a positive Go duration such as %q, got %q.", d.block, d.name, d.example, raw)
	}
}

// durationSetting finds the declaration of block.name.
func durationSetting(block, name string) (duration, bool) {
	for _, d := range durations {
		if d.block == block && d.name == name {
			return d, true
		}
	}
	return duration{}, false
}
