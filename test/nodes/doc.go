// Package nodes runs real Kubernetes nodes on one machine for tests,
// `bin/devcluster up --nodes N` and the demo. Each node is a network
// namespace of the local cloud (test/localcloud) with its own mount
// namespace in which containerd, kubelet (--cloud-provider=external, so
// nodes start tainted uninitialized) and kube-proxy run, plus the cluster's
// kube-controller-manager, kube-scheduler (test/devcluster) and CoreDNS as
// host processes.
//
// What this machine needs (checked on the project's VMs): cgroup v1
// hierarchies, so kubelet runs with failCgroupV1: false and the cgroupfs
// driver under a cgroup root made beforehand in every hierarchy; no
// CAP_SYS_RESOURCE, so containerd restricts oom_score_adj and kubelet and
// kube-proxy keep theirs; runc (Debian's) as the OCI runtime; images are
// built locally (make tools-nodes) and imported, never pulled. The CNI
// bridge does not masquerade: pod ranges are routed between nodes by the
// cloud's router, i.e. by tfccm's routes workspace. Clusters are IPv4;
// Options.DualStack makes one dual-stack (both families for the nodes'
// addresses, Services, pods and their routes, kube-proxy's rules).
//
// Down (and a failed Up) leave no process, network namespace, route,
// cgroup directory or mount behind: a node's mounts live in its mount
// namespace and vanish with it.
package nodes
