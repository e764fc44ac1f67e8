package config

import "fmt"

// The take-over of Services from MetalLB (compat { metallb_takeover }).
const (
	// TakeoverNow serves class-less Services at once (the default).
	TakeoverNow = "now"
	// TakeoverPrepare applies class-less Services' load balancers without
	// announcing them until each is taken over.
	TakeoverPrepare = "prepare"
	// TakeoverConfigMap is the ConfigMap in tfccm's namespace whose keys
	// name the Services taken over (TakeoverKey) while preparing; only the
	// admin's RBAC may write it.
	TakeoverConfigMap = "tfccm-takeover"
	// TakeoverAll is the key of TakeoverConfigMap that takes every Service over.
	TakeoverAll = "all"
)

// TakeoverKey is a Service's key in TakeoverConfigMap: "<namespace>.<name>",
// unambiguous as neither a namespace nor a Service name holds a dot.
func TakeoverKey(namespace, name string) string { return namespace + "." + name }

func (c *Compat) finish(k *checker) {
	c.MetalLBTakeover = orDefault(c.MetalLBTakeover, TakeoverNow)
	switch c.MetalLBTakeover {
	case TakeoverNow:
	case TakeoverPrepare:
		if !c.MetalLB {
			k.errAt(at("compat", "metallb_takeover"), "Invalid metallb_takeover",
				`compat.metallb_takeover = "prepare" prepares Services migrated from MetalLB: it needs compat.metallb = true.`)
		}
	default:
		k.errAt(at("compat", "metallb_takeover"), "Invalid metallb_takeover",
			fmt.Sprintf("compat.metallb_takeover %q: want \"now\" or \"prepare\".", c.MetalLBTakeover))
	}
}

// Preparing reports whether class-less Services are prepared, not
// announced, until taken over.
func (c *Config) Preparing() bool {
	return c.Compat != nil && c.Compat.MetalLB && c.Compat.MetalLBTakeover == TakeoverPrepare
}
