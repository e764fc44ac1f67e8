package localcloud

import "testing"

func TestPoolBits(t *testing.T) {
	for _, tc := range []struct{ vips, want int }{
		{0, 24},
		{254, 24},
		{255, 23},
		{1000, 22},
		{5000, 19},
		{8190, 19},
		{8191, 18},
	} {
		if got := poolBits(tc.vips); got != tc.want {
			t.Errorf("poolBits(%d) = /%d, want /%d", tc.vips, got, tc.want)
		}
	}
}
