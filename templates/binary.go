package templates

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tfccm/tfccm/config"
)

// MinOpenTofu is the first OpenTofu with provider for_each.
const MinOpenTofu = "1.9"

var reVersion = regexp.MustCompile(`^(OpenTofu|Terraform) v(\d+)\.(\d+)\.`)

// CheckBinary refuses a terraform.binary that cannot run the set: a set
// that needs OpenTofu (OpenTofuOnly) with HashiCorp Terraform or an
// OpenTofu older than MinOpenTofu. It runs `<binary> version` only for such
// a set.
func CheckBinary(ctx context.Context, s *Set, binary string) error {
	return needOpenTofu(ctx, binary, "the template set", s.OpenTofuOnly())
}

// CheckEncryption refuses a binary that is not OpenTofu when the cloud
// config's encryption block is set (Terraform would write plaintext
// state); config.Parse already refuses a binary named terraform*.
func CheckEncryption(ctx context.Context, enc *config.Encryption, binary string) error {
	if enc == nil {
		return nil
	}
	return needOpenTofu(ctx, binary, "the encryption block", "state and plan encryption is OpenTofu's")
}

// needOpenTofu checks that binary is OpenTofu MinOpenTofu or later when
// why (the reason) is set; who needs it names the requirement in errors.
func needOpenTofu(ctx context.Context, binary, who, why string) error {
	if why == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return fmt.Errorf("%s needs OpenTofu %s or later (%s); running %q version: %w", who, MinOpenTofu, why, binary, err)
	}
	// The version line, after any warnings (e.g. about the CLI configuration).
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	line := lines[0]
	for _, l := range lines {
		if reVersion.MatchString(l) {
			line = l
			break
		}
	}
	return checkVersion(line, binary, who, why)
}

func checkVersion(first, binary, who, why string) error {
	m := reVersion.FindStringSubmatch(first)
	if m == nil {
		return fmt.Errorf("%s needs OpenTofu %s or later (%s); %q version says %q", who, MinOpenTofu, why, binary, first)
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	if m[1] == "Terraform" {
		return fmt.Errorf("%s needs OpenTofu %s or later (%s), but terraform.binary %q is %s: set terraform.binary to an OpenTofu binary", who, MinOpenTofu, why, binary, first)
	}
	if major < 1 || (major == 1 && minor < 9) {
		return fmt.Errorf("%s needs OpenTofu %s or later (%s), but terraform.binary %q is %s", who, MinOpenTofu, why, binary, first)
	}
	return nil
}
