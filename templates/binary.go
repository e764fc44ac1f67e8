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

// engines is what can run something: the oldest OpenTofu 1.x minor, and
// the oldest Terraform 1.x minor (-1: no Terraform can).
type engines struct{ tofu, terraform int }

var (
	// tofuOnly: provider for_each, state and plan encryption.
	tofuOnly = engines{tofu: 9, terraform: -1}
	// ephemeralVariables: OpenTofu 1.11, Terraform 1.10.
	ephemeralVariables = engines{tofu: 11, terraform: 10}
)

func (e engines) String() string {
	if e.terraform < 0 {
		return fmt.Sprintf("OpenTofu 1.%d or later", e.tofu)
	}
	return fmt.Sprintf("OpenTofu 1.%d or Terraform 1.%d or later", e.tofu, e.terraform)
}

var reVersion = regexp.MustCompile(`^(OpenTofu|Terraform) v(\d+)\.(\d+)\.`)

// CheckBinary refuses a terraform.binary that cannot run the set: a set
// that needs OpenTofu (OpenTofuOnly) with HashiCorp Terraform or an
// OpenTofu older than MinOpenTofu, and a set whose templates take the
// ephemeral credentials variable with an engine without ephemeral
// variables. It runs `<binary> version` only for such a set.
func CheckBinary(ctx context.Context, s *Set, binary string) error {
	if err := needEngine(ctx, binary, "the template set", s.OpenTofuOnly(), tofuOnly); err != nil {
		return err
	}
	return needEngine(ctx, binary, "the template set", s.Credentials(), ephemeralVariables)
}

// CheckEncryption refuses a binary that is not OpenTofu when the cloud
// config's encryption block is set (Terraform would write plaintext
// state); config.Parse already refuses a binary named terraform*.
func CheckEncryption(ctx context.Context, enc *config.Encryption, binary string) error {
	if enc == nil {
		return nil
	}
	return needEngine(ctx, binary, "the encryption block", "state and plan encryption is OpenTofu's", tofuOnly)
}

// needEngine checks that binary is one of want when why (the reason) is
// set; who needs it names the requirement in errors.
func needEngine(ctx context.Context, binary, who, why string, want engines) error {
	if why == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return fmt.Errorf("%s needs %s (%s); running %q version: %w", who, want, why, binary, err)
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
	return checkVersion(line, binary, who, why, want)
}

func checkVersion(first, binary, who, why string, want engines) error {
	m := reVersion.FindStringSubmatch(first)
	if m == nil {
		return fmt.Errorf("%s needs %s (%s); %q version says %q", who, want, why, binary, first)
	}
	major, _ := strconv.Atoi(m[2])
	minor, _ := strconv.Atoi(m[3])
	least := want.tofu
	if m[1] == "Terraform" {
		if want.terraform < 0 {
			return fmt.Errorf("%s needs %s (%s), but terraform.binary %q is %s: set terraform.binary to an OpenTofu binary", who, want, why, binary, first)
		}
		least = want.terraform
	}
	if major < 1 || (major == 1 && minor < least) {
		return fmt.Errorf("%s needs %s (%s), but terraform.binary %q is %s", who, want, why, binary, first)
	}
	return nil
}
