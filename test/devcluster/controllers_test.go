package devcluster

import (
	"slices"
	"testing"
)

func TestNodeCIDRMaskFlags(t *testing.T) {
	for _, tc := range []struct {
		clusterCIDR string
		want        []string
	}{
		{"10.244.0.0/16", []string{"--node-cidr-mask-size=24"}},
		{"fd00:10:244::/56", []string{"--node-cidr-mask-size=64"}},
		{"10.244.0.0/16,fd00:10:244::/56", []string{"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}},
		{"fd00:10:244::/56,10.244.0.0/16", []string{"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}},
	} {
		if got := nodeCIDRMaskFlags(tc.clusterCIDR); !slices.Equal(got, tc.want) {
			t.Errorf("nodeCIDRMaskFlags(%q) = %v, want %v", tc.clusterCIDR, got, tc.want)
		}
	}
}
