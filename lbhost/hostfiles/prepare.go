// Prepare: the shell script `tfccm lbhost prepare` prints, which makes a
// fresh Debian host an LB host from these files in one run.

package hostfiles

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"
)

// SocketGroup is the group of HAProxy's master socket (the drop-in's
// -S ...,group,tfccm). The preparation creates it for every login, root
// included: HAProxy does not start while it is missing.
const SocketGroup = "tfccm"

// Preparation says how to prepare one host.
type Preparation struct {
	// Name is the host's name in load_balancer.settings.hosts: keepalived's
	// router_id.
	Name string
	// User is the SSH login: "root", or a user the script creates with
	// exactly the sudoers rules (settings sudo = true).
	User string
	// AuthorizedKey is the content of tfccm's public key file (one key in
	// authorized_keys format).
	AuthorizedKey []byte
	// ConfigDir and KeepalivedConfig are the host's config_dir and
	// keepalived_config settings (default DefaultConfigDir and
	// KeepalivedConfig).
	ConfigDir, KeepalivedConfig string
}

var (
	reHostName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)
	reUser     = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	rePath     = regexp.MustCompile(`^(/[a-zA-Z0-9._-]+)+$`)
)

// Script returns the POSIX shell script that prepares the host as root:
// it installs the missing packages, creates group tfccm, the login (with
// the key) and its sudoers rules, installs the files, applies the sysctls
// and restarts HAProxy and keepalived. Running it again changes nothing.
// Nothing the caller gives is spliced into the script as it came: the
// name, user and paths must match a strict pattern, and the key is parsed
// and written back in its canonical form (its comment dropped).
func (p Preparation) Script() (string, error) {
	key, err := p.validate()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n# tfccm lbhost prepare: LB host %s of tfccm's baremetal set, SSH login %s.\n", p.Name, p.User)
	b.WriteString("# Run as root on the host (or give it as cloud-init user data); running it again changes nothing.\nset -eu\n")
	p.writePackages(&b)
	fmt.Fprintf(&b, "\n# HAProxy's master socket belongs to group %[1]s (haproxy.service.d/tfccm.conf).\ngetent group %[1]s >/dev/null || groupadd --system %[1]s\n", SocketGroup)
	p.writeLogin(&b, key)
	p.writeFiles(&b)
	b.WriteString("\nsystemctl daemon-reload\nsystemctl enable haproxy keepalived\nsystemctl restart haproxy keepalived\n")
	fmt.Fprintf(&b, "echo \"LB host %s prepared: check it with tfccm lbhost check\"\n", p.Name)
	return b.String(), nil
}

// validate checks every field and returns the key in canonical form.
func (p *Preparation) validate() (string, error) {
	if p.ConfigDir == "" {
		p.ConfigDir = DefaultConfigDir
	}
	if p.KeepalivedConfig == "" {
		p.KeepalivedConfig = KeepalivedConfig
	}
	var errs []error
	if !reHostName.MatchString(p.Name) {
		errs = append(errs, fmt.Errorf("host name %q: want a name of letters, digits, '.', '_' and '-' (its name in settings.hosts)", p.Name))
	}
	if !reUser.MatchString(p.User) {
		errs = append(errs, fmt.Errorf("login %q: want root or a user name of lowercase letters, digits, '_' and '-'", p.User))
	}
	for _, path := range []string{p.ConfigDir, p.KeepalivedConfig} {
		if !rePath.MatchString(path) || strings.Contains(path, "/.") {
			errs = append(errs, fmt.Errorf("path %q: want an absolute path of letters, digits, '.', '_' and '-'", path))
		}
	}
	pub, _, _, rest, err := ssh.ParseAuthorizedKey(p.AuthorizedKey)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("the public key: %w (want one line as ssh-keygen writes it to the .pub file)", err))
	case strings.TrimSpace(string(rest)) != "":
		errs = append(errs, errors.New("the public key file holds more than one key: give tfccm's key alone"))
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " tfccm", nil
}

func (p Preparation) writePackages(b *strings.Builder) {
	pkgs := strings.Join(Packages(), " ")
	fmt.Fprintf(b, `
# Packages: only the missing ones (no download when all are there).
missing=
for p in %s; do
  dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qx 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q && apt-get install -y -q $missing
fi
`, pkgs)
}

// writeLogin authorizes key for the login: root's, or a system user's
// with the sudoers rules and group tfccm.
func (p Preparation) writeLogin(b *strings.Builder, key string) {
	u := p.User
	b.WriteString("\n# The login tfccm connects as, and its key.\n")
	if u != "root" {
		// Its primary group is tfccm (a group named as the login, as
		// --user-group makes, would clash with it for the login tfccm).
		fmt.Fprintf(b, "id -u %[1]s >/dev/null 2>&1 || useradd --system --create-home --shell /bin/sh --gid %[2]s --password '*' %[1]s\n", u, SocketGroup)
		fmt.Fprintf(b, "id -nG %[2]s | tr ' ' '\\n' | grep -qx %[1]s || usermod -a -G %[1]s %[2]s\n", SocketGroup, u)
	}
	fmt.Fprintf(b, "home=$(getent passwd %s | cut -d: -f6)\n", u)
	fmt.Fprintf(b, "install -d -m 700 -o %[1]s -g \"$(id -g %[1]s)\" \"$home/.ssh\"\n", u)
	fmt.Fprintf(b, "[ -f \"$home/.ssh/authorized_keys\" ] || install -m 600 -o %[1]s -g \"$(id -g %[1]s)\" /dev/null \"$home/.ssh/authorized_keys\"\n", u)
	fmt.Fprintf(b, "key='%s'\n", key)
	b.WriteString("grep -qxF \"$key\" \"$home/.ssh/authorized_keys\" || printf '%s\\n' \"$key\" >> \"$home/.ssh/authorized_keys\"\n")
	if u != "root" {
		fmt.Fprintf(b, "\n# What %s may run as root (sudo -n), checked by visudo before it counts.\n", u)
		p.writeFile(b, "/etc/sudoers.d/tfccm.new", "440", Sudoers(u))
		b.WriteString("visudo -cqf /etc/sudoers.d/tfccm.new\nmv /etc/sudoers.d/tfccm.new " + SudoersFile + "\n")
	}
}

// writeFiles installs the host files for the host's paths and name.
func (p Preparation) writeFiles(b *strings.Builder) {
	b.WriteString("\n# lbhost's directories and the host files (lbhost/hostfiles).\n")
	fmt.Fprintf(b, "mkdir -p %[1]s/fragments %[1]s/claims %[1]s/keepalived\n", p.ConfigDir)
	for _, f := range []struct{ path, content string }{
		{p.ConfigDir + "/base.cfg", HAProxyBase(p.ConfigDir)},
		{p.KeepalivedConfig, KeepalivedMain(p.Name, p.ConfigDir)},
		{HAProxyDropIn, DropIn(p.ConfigDir)},
		{SysctlFile, File("sysctl.d/60-tfccm-lbhost.conf")},
	} {
		p.writeFile(b, f.path, "644", f.content)
	}
	fmt.Fprintf(b, "sysctl -q -p %s\n", SysctlFile)
}

// writeFile writes content to path through a here-document whose
// delimiter no line of the (embedded) content is.
func (p Preparation) writeFile(b *strings.Builder, path, mode, content string) {
	fmt.Fprintf(b, "mkdir -p \"$(dirname %[1]s)\"\ncat > %[1]s.tmp <<'TFCCM_EOF'\n%[2]sTFCCM_EOF\nchmod %[3]s %[1]s.tmp && mv %[1]s.tmp %[1]s\n", path, content, mode)
}
