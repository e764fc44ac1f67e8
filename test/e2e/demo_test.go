package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `make demo`'s program once (--once tears it down after
// printing) and checks what a new user sees: an EXTERNAL-IP, nodes
// initialized from Terraform state, and a reply through the load balancer.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./hack/demo", "--once", "--dir", t.TempDir(), "--prefix", fmt.Sprintf("dm%d", os.Getpid()%100000000))
	cmd.Dir = repoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^hello\s+LoadBalancer\s+\S+\s+10\.252\.\d+\.\d+\s+80:30080/TCP`),
		regexp.MustCompile(`(?m)^node-a\s+terraform://local/node-a\s+local-a\s+local\.small\s+10\.250\.0\.11`),
		regexp.MustCompile(`(?m)^hello from node-[abc]$`),
		regexp.MustCompile(`(?m)^10\.244\.1\.0/24 via 10\.250\.0\.11 `),
	} {
		if !want.MatchString(text) {
			t.Errorf("demo output lacks %s:\n%s", want, text)
		}
	}
	if !strings.Contains(text, "tearing down") {
		t.Errorf("demo did not tear down:\n%s", text)
	}
}
