// The unprivileged login of the test hosts and its sudoers rules.

package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tfccm/tfccm/lbhost/hostfiles"
)

// sudoersFile is where h's sudoers rules are (its own /etc/sudoers.d).
func (h *Host) sudoersFile() string {
	return filepath.Join(h.dir, "sys", "sudoers.d", filepath.Base(hostfiles.SudoersFile))
}

// setUpSudoUser readies this machine for user as the hosts' login (the
// preparation creates it, its group and its sudoers rules): dir, which
// holds the hosts' master sockets, becomes reachable by it (o+x on it and
// its ancestors), and a user an older suite made with no home gets one
// under /home (each host has its own /home, where the preparation puts
// its authorized key).
func setUpSudoUser(user, dir string) error {
	if out, err := exec.Command("getent", "passwd", user).Output(); err == nil {
		if f := strings.Split(strings.TrimSpace(string(out)), ":"); len(f) > 5 && f[5] != "/home/"+user {
			if err := run("usermod", "--home", "/home/"+user, user); err != nil {
				return err
			}
		}
	}
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, st.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("make %s reachable for %s: %w", d, user, err)
			}
		}
	}
	return nil
}

// RemoveSudoers removes the hosts' sudoers rules (sudo then refuses every
// command of the login: what a host without them does).
func (hs *Hosts) RemoveSudoers() error {
	if hs.sudoUser == "" {
		return nil
	}
	for _, h := range hs.Hosts {
		if err := os.Remove(h.sudoersFile()); err != nil {
			return err
		}
	}
	return nil
}

// InstallSudoers puts the hosts' sudoers rules (back) in place, as the
// preparation installs them.
func (hs *Hosts) InstallSudoers() error {
	if hs.sudoUser == "" {
		return nil
	}
	for _, h := range hs.Hosts {
		if err := os.WriteFile(h.sudoersFile(), []byte(hostfiles.Sudoers(hs.sudoUser)), 0o440); err != nil {
			return err
		}
	}
	return nil
}
