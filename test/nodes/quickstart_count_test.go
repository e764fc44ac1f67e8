package nodes

import "testing"

// TestCountCommands: what TestQuickstart counts as a command the user types.
func TestCountCommands(t *testing.T) {
	for _, tc := range []struct {
		block string
		want  int
	}{
		{"ssh-keygen -f k\n", 1},
		{"# a comment\n\na\nb\n", 2},
		{"cat > v.yaml <<EOF\nx: 1\ny: |\n  z\nEOF\nnext\n", 2},
		{"cat > v.yaml <<'EOF'\nEOF\n", 1},
		{"helm install a \\\n  -f v.yaml\nhelm test a\n", 2},
		{"tfccm lbhost prepare |\n  ssh root@h sh\n", 1},
	} {
		if got := countCommands(tc.block); got != tc.want {
			t.Errorf("%q: %d commands, want %d", tc.block, got, tc.want)
		}
	}
}
