package harness

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// CloudConfig is a --cloud-config file for the CCM.
type CloudConfig struct {
	// Header is a comment put first ("# " is prepended to each line).
	Header string
	// ClusterName and WorkDir are cluster_name and work_dir.
	ClusterName string
	WorkDir     string
	// TemplateSet is template_set; empty leaves it out (the default set).
	TemplateSet string
	// Tofu is terraform.binary, the OpenTofu the CCM runs.
	Tofu string
	// Terraform holds further lines of the terraform block, e.g. "review = true".
	Terraform []string
	// Blocks is HCL added verbatim after the terraform block.
	Blocks string
}

// String renders the config as HCL.
func (c CloudConfig) String() string {
	var b strings.Builder
	if c.Header != "" {
		for _, l := range strings.Split(strings.TrimRight(c.Header, "\n"), "\n") {
			b.WriteString("# " + l + "\n")
		}
	}
	fmt.Fprintf(&b, "cluster_name = %q\nwork_dir     = %q\n", c.ClusterName, c.WorkDir)
	if c.TemplateSet != "" {
		fmt.Fprintf(&b, "template_set = %q\n", c.TemplateSet)
	}
	fmt.Fprintf(&b, "terraform {\n  binary = %q\n", c.Tofu)
	for _, l := range c.Terraform {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("}\n")
	b.WriteString(c.Blocks)
	return b.String()
}

// Write writes the config to path.
func (c CloudConfig) Write(path string) error {
	return os.WriteFile(path, []byte(c.String()), 0o644)
}

// HCLObject renders a map as an HCL object literal of strings (nested
// map[string]any values as nested objects), keys sorted, to be the value
// of an attribute in a top-level block (such as load_balancer.settings).
func HCLObject(m map[string]any) string { return hclObject(m, "  ") }

func hclObject(m map[string]any, indent string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		if sub, ok := m[k].(map[string]any); ok {
			fmt.Fprintf(&b, "%s  %q = %s\n", indent, k, hclObject(sub, indent+"  "))
			continue
		}
		fmt.Fprintf(&b, "%s  %s = %q\n", indent, k, fmt.Sprint(m[k]))
	}
	b.WriteString(indent + "}")
	return b.String()
}

// Block renders a top-level block called name holding settings = HCLObject(settings).
func Block(name string, settings map[string]any) string {
	return fmt.Sprintf("%s {\n  settings = %s\n}\n", name, HCLObject(settings))
}
