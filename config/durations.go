package config

import (
	"fmt"
	"time"
)

// The duration settings: each one's default, bounds, relation to another
// setting and the message for a bad value are its row in durations, the
// one place they are declared; Parse applies the rows (parseDurations)
// and the reference shows them (reference.go).

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
	// atLeast names the setting of the same block this one must not be
	// shorter than (unless this one is 0, off); short says so.
	atLeast string
	short   func(v, least time.Duration) string
}

// durations are every duration setting, in the order they are checked.
var durations = []duration{
	{block: "terraform", name: "timeout", raw: func(c *Config) string { return c.Terraform.TimeoutRaw },
		dst: func(c *Config) *time.Duration { return &c.Terraform.Timeout }, def: DefaultOperationTimeout, example: "10m"},
	{block: "terraform", name: "drift_interval", raw: func(c *Config) string { return c.Terraform.DriftIntervalRaw },
		dst: func(c *Config) *time.Duration { return &c.Terraform.DriftInterval }, def: DefaultDriftInterval, zero: true, example: "1h", note: ` ("0" turns drift repair off)`},
	{block: "terraform", name: "coalesce_quiet", raw: func(c *Config) string { return c.Terraform.CoalesceQuietRaw },
		dst: func(c *Config) *time.Duration { return &c.Terraform.CoalesceQuiet }, def: DefaultCoalesceQuiet, zero: true, max: "10m"},
	{block: "terraform", name: "coalesce_max", raw: func(c *Config) string { return c.Terraform.CoalesceMaxRaw },
		dst: func(c *Config) *time.Duration { return &c.Terraform.CoalesceMax }, def: DefaultCoalesceMax, zero: true, max: "10m",
		atLeast: "coalesce_quiet", short: func(v, least time.Duration) string {
			return fmt.Sprintf("terraform.coalesce_max (%s) must not be shorter than coalesce_quiet (%s).", v, least)
		}},
	{block: "load_balancer", name: "ensure_wait", raw: func(c *Config) string { return c.LoadBalancer.EnsureWaitRaw },
		dst: func(c *Config) *time.Duration { return &c.LoadBalancer.EnsureWait }, def: DefaultEnsureWait, zero: true, max: "2h", example: "15m"},
	{block: "load_balancer", name: "health_interval", raw: func(c *Config) string { return c.LoadBalancer.HealthIntervalRaw },
		dst: func(c *Config) *time.Duration { return &c.LoadBalancer.HealthInterval }, def: DefaultHealthInterval, zero: true, example: "30s", note: ` ("0s" turns it off)`},
	{block: "routes", name: "batch_window", raw: func(c *Config) string { return c.Routes.BatchWindowRaw },
		dst: func(c *Config) *time.Duration { return &c.Routes.BatchWindow }, def: DefaultBatchWindow, zero: true, example: "2s"},
	{block: "instances", name: "ttl", raw: func(c *Config) string { return c.Instances.TTLRaw },
		dst: func(c *Config) *time.Duration { return &c.Instances.TTL }, def: DefaultStateTTL, example: "30s"},
	{block: "instances", name: "max_staleness", raw: func(c *Config) string { return c.Instances.MaxStalenessRaw },
		dst: func(c *Config) *time.Duration { return &c.Instances.MaxStaleness }, def: DefaultStateMaxStaleness, example: "30s",
		atLeast: "ttl", short: func(time.Duration, time.Duration) string {
			return "instances.max_staleness must not be shorter than instances.ttl."
		}},
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
