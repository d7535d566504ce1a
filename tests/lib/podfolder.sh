# podfolder.sh — a kubelet-style pods folder and pod cgroups for imds-node's
# tests (sourced after netns.sh; root).
#
#   PODS_DIR                        <NET_TMP>/pods, as /var/lib/kubelet/pods
#   pod_folder UID                  <PODS_DIR>/UID/volumes/kubernetes.io~empty-dir/imds-node,
#                                   made as the kubelet makes a disk-backed emptyDir
#                                   (pkg/volume/emptydir/empty_dir.go: 0777); echoes it
#   pod_cgroup UID                  a cgroup named as the kubelet's cgroupfs driver names a
#                                   pod's (kubepods/pod<UID>); echoes its folder
#   sidecar_exec UID NS LOG [ENV-ARG...] -- CMD...
#                                   CMD (an imds-server and its arguments) as the webhook
#                                   injects it in agent mode: in netns NS, in the pod's cgroup
#                                   and its imds-node folder (the agent's socket named
#                                   relative to it), as UID 107 with no capability at all
#                                   (setpriv --inh-caps=-all --bounding-set=-all), env(1)
#                                   given ENV-ARG... (-i first for a clean environment) and
#                                   then IMDS_NET_MODE=agent IMDS_AGENT_SOCKET=agent.sock;
#                                   output appended to LOG; SIDECAR_PID
#   sidecar_start UID NS LOG [VAR=value...]
#                                   sidecar_exec of `imds-server run` with a VM of its own
#                                   (vm-UID) and netns.sh's data; SIDECAR_PID
#   pod_run UID NS CMD...           CMD in the pod's cgroup and netns NS ("-": the node's),
#                                   in its imds-node folder; POD_RUN_PID
#   agent_start LOG [ARGS...]       imds-node --pods-dir PODS_DIR as root in the test's
#                                   own namespace (the node's); AGENT_PID; AGENT_RO=1: the
#                                   pods folder read-only to it
#   agent_stop [SIG]                SIGTERM (or SIG) and wait
#   caps_of PID                     "CapEff CapPrm CapBnd" of a process
#   (wait_for_line: netns.sh's)
# The folders above the pods folder are opened to UID 107 (o+x): in a pod the
# sidecar sees the emptyDir mounted at /run/imds-node, here at its host path.
# shellcheck shell=bash
[[ -z ${PODFOLDER_LOADED:-} ]] || return 0
PODFOLDER_LOADED=1

# The sidecar runs as UID 107 and reads its data below NET_TMP: a checkout
# in root's home (/root is 0700) is out of its reach, so the folder moves
# to TMPDIR then (netns.sh's cleanup removes whichever NET_TMP names).
if ! setpriv --reuid=107 --regid=107 --clear-groups test -x "$NET_TMP" 2>/dev/null; then
	rmdir "$NET_TMP" 2>/dev/null
	NET_TMP=$(mktemp -d "${TMPDIR:-/tmp}/imds-net.XXXXXX")
	# shellcheck disable=SC2034 # netns.sh's, read by the suites
	IMDS_LOG=$NET_TMP/imds.log
fi
IMDS_NODE=${IMDS_NODE:-$(dirname "$IMDS_SERVER")/imds-node}
PODS_DIR=$NET_TMP/pods
mkdir -p "$PODS_DIR"
chmod 0711 "$NET_TMP" "$PODS_DIR"
AGENT_PID=
SIDECAR_PID=
PODFOLDER_PIDS=()
# The pods' cgroups (the agent reads pod<UID> in /proc/<pid>/cgroup): in the
# unified hierarchy wherever it is mounted, else v1's pids one. With none
# mounted (a chroot with a bare /sys: fresh-check's) a cgroup2 of our own,
# unmounted at exit; PODFOLDER_CG_MOUNT=1 takes that path anyway.
CG_MNT=
if [[ ${PODFOLDER_CG_MOUNT:-0} != 1 && -e /sys/fs/cgroup/cgroup.controllers ]]; then
	CG_ROOT=/sys/fs/cgroup/imds-test-$NS_TAG
elif [[ ${PODFOLDER_CG_MOUNT:-0} != 1 && -e /sys/fs/cgroup/unified/cgroup.controllers ]]; then
	CG_ROOT=/sys/fs/cgroup/unified/imds-test-$NS_TAG
elif [[ ${PODFOLDER_CG_MOUNT:-0} != 1 && -e /sys/fs/cgroup/pids/cgroup.procs ]]; then
	CG_ROOT=/sys/fs/cgroup/pids/imds-test-$NS_TAG
else
	CG_MNT=$NET_TMP/cgroup
	mkdir -p "$CG_MNT"
	mount -t cgroup2 none "$CG_MNT" || echo "podfolder.sh: no cgroup hierarchy mounted and none could be (mount -t cgroup2)" >&2
	CG_ROOT=$CG_MNT/imds-test-$NS_TAG
fi
export IMDS_NODE

podfolder_cleanup() {
	local p d
	for p in $AGENT_PID "${PODFOLDER_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	if [[ -d "$CG_ROOT" ]]; then
		# deepest first
		while read -r d; do rmdir "$d" 2>/dev/null; done < <(find "$CG_ROOT" -depth -type d)
	fi
	[[ -z $CG_MNT ]] || umount "$CG_MNT" 2>/dev/null
}
trap 'podfolder_cleanup; netns_cleanup' EXIT

pod_folder() {
	local d="$PODS_DIR/$1/volumes/kubernetes.io~empty-dir/imds-node"
	mkdir -p "$d" || return 1
	chmod 0750 "$PODS_DIR/$1"
	chmod 0711 "$PODS_DIR/$1" "$PODS_DIR/$1/volumes" "$PODS_DIR/$1/volumes/kubernetes.io~empty-dir"
	chmod 0777 "$d"
	echo "$d"
}

pod_cgroup() {
	local c="$CG_ROOT/kubepods/pod$1"
	mkdir -p "$c" || return 1
	echo "$c"
}

# The data the sidecar reads, readable by 107.
podfolder_data() {
	imds_data
	chmod -R a+rX "$NET_TMP/data" "$NET_TMP/tokens"
}

sidecar_exec() {
	local uid=$1 ns=$2 log=$3 dir cg envs=()
	shift 3
	while (($#)) && [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	dir=$(pod_folder "$uid") && cg=$(pod_cgroup "$uid") || return 1
	# shellcheck disable=SC2016 # $$ is the inner shell's
	# in the socket's folder, named relative to it: its host path is longer
	# than a socket's (108 bytes); in a pod it is /run/imds-node/agent.sock
	sh -c 'echo $$ >"$1/cgroup.procs" && cd "$2" && shift 2 && exec "$@"' sh "$cg" "$dir" \
		ip netns exec "$ns" env "${envs[@]}" IMDS_NET_MODE=agent IMDS_AGENT_SOCKET=agent.sock \
		setpriv --reuid 107 --regid 107 --clear-groups --inh-caps=-all --bounding-set=-all \
		"$@" >>"$log" 2>&1 &
	SIDECAR_PID=$!
	PODFOLDER_PIDS+=("$SIDECAR_PID")
}

sidecar_start() {
	local uid=$1 ns=$2 log=$3
	shift 3
	podfolder_data
	: >"$log"
	sidecar_exec "$uid" "$ns" "$log" \
		IMDS_NAMESPACE=default IMDS_VM_NAME="vm-$uid" IMDS_POD_NAME="virt-launcher-$uid" \
		IMDS_SA_NAME=default IMDS_TOKEN_PATH="$NET_TMP/tokens/token" \
		IMDS_USER_DATA_FILE="$NET_TMP/data/user-data" "$@" -- "$IMDS_SERVER" run
}

pod_run() {
	local uid=$1 ns=$2 dir cg
	shift 2
	dir=$(pod_folder "$uid") && cg=$(pod_cgroup "$uid") || return 1
	local pre=()
	[[ $ns != - ]] && pre=(ip netns exec "$ns")
	# shellcheck disable=SC2016 # $$ is the inner shell's
	sh -c 'echo $$ >"$1/cgroup.procs" && cd "$2" && shift 2 && exec "$@"' sh "$cg" "$dir" \
		"${pre[@]}" "$@" &
	POD_RUN_PID=$!
	PODFOLDER_PIDS+=("$POD_RUN_PID")
}

# AGENT_RO=1: the pods folder mounted read-only for it, as the DaemonSet's
# hostPath is (in a mount namespace of its own).
agent_start() {
	local log=$1 pre=()
	shift
	# shellcheck disable=SC2016 # the inner shell's arguments
	[[ ${AGENT_RO:-0} == 1 ]] && pre=(unshare -m --propagation private sh -c
		'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' sh "$PODS_DIR")
	"${pre[@]}" "$IMDS_NODE" --pods-dir "$PODS_DIR" --rescan-ms 500 "$@" >>"$log" 2>&1 &
	AGENT_PID=$!
}

agent_stop() {
	[[ -n "$AGENT_PID" ]] || return 0
	kill "-${1:-TERM}" "$AGENT_PID" 2>/dev/null
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
}

caps_of() {
	awk '/^CapEff/ {e=$2} /^CapPrm/ {p=$2} /^CapBnd/ {b=$2} END {print e, p, b}' "/proc/$1/status"
}

# (wait_for_line FILE REGEX [TIMEOUT_S]: netns.sh's)
