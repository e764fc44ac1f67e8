// Package hostfiles owns what a load-balancer host of the baremetal set is
// prepared with (docs/install-baremetal.md): the Debian packages, HAProxy's
// base.cfg, keepalived's main configuration, the haproxy.service drop-in,
// the sysctl and the sudoers rules of a non-root SSH login, written for the
// default paths (config_dir /etc/tfccm/lbhost, login tfccm) and given for
// other paths, so the test suite's LB hosts (lbhost/hosttest) run from
// these very files; the script that prepares a host from them
// (Preparation.Script, `tfccm lbhost prepare`); and the check of a host
// (Check), which names what is missing or wrong with the command that
// fixes it.
package hostfiles
