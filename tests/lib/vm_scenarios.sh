# shellcheck shell=bash disable=SC2154,SC2034,SC2153 # the suite's globals: vm_boot.sh sets and reads them
# vm_scenarios.sh — the VM suite's scenario runners: scenario_<runner> <name>
# <label> <binding> <reboot>, named by the scenario table's runner column.
# Sourced by tests/integration/vm_boot.sh after tests/lib/tap.sh, vm.sh and
# netns.sh; its functions use the suite's globals (work, SC_*, NS*, POD_*,
# VM_*, GUEST_*, SUMMARY; the suite's header says what each scenario does).

# --- a binding's scenario -------------------------------------------------------------
# scenario_binding <dir> <label> <binding> <reboot 0|1>: the guest GUEST_IMG in the
# launcher pod of <binding> (masquerade, istio, bridge, passt), with POD_NETCFG when
# set: the boot, what the guest got, what the node saw, who else is refused, SSH;
# with reboot=1 a second boot on the same disk.  In bridge binding and passt the
# sidecar is killed (SIGKILL) once the guest's cloud-init has its meta-data and
# started again as kubelet restarts it.  It ends in a live migration: the guest
# boots on qemu 10 (need_mig_qemu).  Adds a line to SUMMARY.
SUMMARY=()
scenario_binding() {
	local d=$1 l=$2 binding=$3 reboot=$4 con="$work/$1/console.log" b2=- out
	need_mig_qemu "$d" "$l" || return 1
	POD_EXTRA=() VOL_IID=''
	if [[ -n ${VOLUME:-} ]]; then
		volume_source "$d" "$l" || return 1
	fi
	BOOT_EXTRA=()
	if [[ ${DISK:-0} == 1 ]]; then
		# KubeVirt's NoCloud disk of that volume, kept (no
		# imds.kubevirt.io/cloud-init-disk: remove): the guest has the
		# disk and the webhook's serial at every boot (issue 30 item 3).
		if ! out=$(genisoimage -quiet -output "$work/$d/cidata.iso" -volid cidata -joliet -rock \
			"$work/$d/iso/user-data" "$work/$d/iso/meta-data" 2>&1); then
			not_ok "$l: KubeVirt's cidata ISO of the volume" "$out"
			return 1
		fi
		BOOT_EXTRA=(-drive "file=$work/$d/cidata.iso,format=raw,if=virtio,readonly=on")
	fi
	# the VMI's spec.domain.chassis.asset, as KubeVirt renders it: SMBIOS
	# type 3's asset tag (pkg/virt-launcher/virtwrap/converter/compute/sysinfo.go)
	[[ -n ${CHASSIS_ASSET:-} ]] && BOOT_EXTRA+=(-smbios "type=3,asset=$CHASSIS_ASSET")
	# not in $(...): pod_up starts background processes and records them
	if ! pod_up "$d" "$binding" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: $binding launcher pod, DHCP, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	ok "$l: $binding launcher pod (tests/lib/netns.sh), DHCP, imds-server run as injected ($(wc -l <"$SC_ENV") env vars, $(grep -o 'IMDS_INTERFACES=[^ ]*' "$SC_ENV"); $SC_AS)"
	GUEST_ADDR=$(binding_of "$binding" address)
	VM_OVERLAY="$work/$d/disk.qcow2" boot_guest "$l" "$con" || return 1
	first_request "$l" "$con" "$work/$d/disk.qcow2" || return 1
	if [[ $(binding_of "$binding" kill) == yes ]]; then
		if ! wait_log "$SC_LOG" ' GET /v1/meta-data 200 ' "$BOOT_TIMEOUT"; then
			not_ok "$l: guest asked for meta-data" "$(console_tail "$con")" "$(tail -n 20 "$SC_LOG")"
			return 1
		fi
		crash_restart "$l" "once the guest had its meta-data"
	fi
	wait_mark "$l: boot 1 finished (report printed)" "$con" 'IMDS-REPORT-DONE boot=1' || return 1
	timings "$l boot 1" "$con"
	local b1=$B_FINAL req=$B_REQ req_final=$B_REQ_FINAL
	ok "$l: boot 1 to cloud-init final ${b1}s (first request at ${req}s, first request -> final ${req_final}s)"
	guest_checks "$l" "$con"
	guest_addr_check "$l" "$con"
	[[ -n ${POD_NETCFG:-} ]] && netcfg_checks "$l" "$con" 1
	latency "$l" "$con"
	v6ll_check "$l" "$con"
	capture_check "$l"
	refusals "$l"
	ssh_login "$l"
	if ((reboot)); then
		reboot_checks "$l" "$con" && b2=$M_BOOT2
		if [[ -n ${CHASSIS_ASSET:-} ]]; then
			expect_eq "$l: boot 2: DataSourceOpenStackLocal again, eth0 kept its address (fallback DHCP)" \
				"DataSourceOpenStackLocal $GUEST_ADDR" \
				"$(line "$con" 'IMDS-RESULT boot=2 ' | grep -o 'DataSourceOpenStackLocal') $(line "$con" 'IMDS-ADDR boot=2' | cut -d' ' -f3- | sed 's/ *$//')"
		fi
	fi
	SUMMARY+=("$l: boot 1 ${b1}s to cloud-init final (first request at ${req}s, -> final ${req_final}s), boot 2 ${b2}s; $B_LAT")
	migrate_checks "$l" "$d"
	vm_stop "$VM_PIDFILE" 2
	POD_EXTRA=() VOL_IID='' BOOT_EXTRA=()
}

# volume_source <dir> <label>: the guest's data from its VMI's own cloud-init
# volume instead of the imds.kubevirt.io/user-data annotation (issue 30):
# VOLUME=nocloud-secret (cloudInitNoCloud, secretRef) or configdrive-secret
# (cloudInitConfigDrive, secretRef), the user data in the Secret vm-userdata.
# The VMI through the webhook (kvci.py nocloud-vmi) gives the annotation
# imds.kubevirt.io/cloud-init, set on the pod as KubeVirt copies it (source and
# migration target alike: POD_EXTRA), and VOL_IID, KubeVirt's instance-id.
volume_source() {
	local d=$1 l=$2 out cd=()
	[[ $VOLUME == configdrive-secret ]] && cd=(--config-drive)
	mkdir -p "$work/$d/secret-ud"
	cp "$USER_DATA" "$work/$d/secret-ud/userdata"
	if ! out=$("$PY" "$REPO/tests/lib/kvci.py" nocloud-vmi --admission-cli "$ADMISSION_CLI" --name "$VM_NAME" \
		--namespace default --uuid "$CONT_UUID" --secret vm-userdata --user-data "$USER_DATA" \
		--out "$work/$d" "${cd[@]}" 2>&1); then
		not_ok "$l: the VMI with its $VOLUME volume through the webhook" "$out"
		return 1
	fi
	POD_EXTRA=(--set-annotation "imds.kubevirt.io/cloud-init=@$work/$d/cloud-init"
		--del-annotation imds.kubevirt.io/user-data --secret "vm-userdata=$work/$d/secret-ud")
	VOL_IID=$CONT_UUID
	ok "$l: user data from the VMI's own $VOLUME volume (imds.kubevirt.io/cloud-init $(cat "$work/$d/cloud-init"))"
}


# --- 6. link-local scenario ----------------------------------------------------------------
# scenario_linklocal <dir> <label> <binding>: see the header; it ends in a live
# migration (need_mig_qemu)
scenario_linklocal() {
	local d=$1 l=$2 con="$work/$1/console.log" netcfg
	need_mig_qemu "$d" "$l" || return 1
	# not in $(...): pod_up starts background processes and records them
	if ! pod_up "$d" "$3" "$USER_DATA_POLL" >"$work/pod_up.out" 2>&1; then
		not_ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	ok "$l: pod netns, tap, no DHCP, arp_ignore=8, imds-server run as injected ($SC_AS)"
	# cloud-init's network config from the kernel command line (it wins over
	# the datasource's): eth0 169.254.77.7/16 only, no gateway, no DHCP.
	netcfg="$(printf '%s' '{version: 1, config: [{type: physical, name: eth0, subnets: [{type: static, address: 169.254.77.7/16}]}]}' | base64 -w0)"
	VM_OVERLAY="$work/$d/disk.qcow2" VM_APPEND="network-config=$netcfg" boot_guest "$l" "$con" || return 1
	VM_APPEND="network-config=$netcfg" first_request "$l" "$con" "$work/$d/disk.qcow2" || return 1
	restart_during_boot "$l" "$con" || return 1
	wait_mark "$l: boot finished (report printed)" "$con" 'IMDS-REPORT-DONE boot=1' || return 1
	timings "$l" "$con"
	L_BOOT=$B_FINAL L_REQ_FINAL=$B_REQ_FINAL
	ok "$l: boot to cloud-init final ${L_BOOT}s (first request -> final ${L_REQ_FINAL}s)"
	expect_eq "$l: guest eth0 has only 169.254.77.7/16" "169.254.77.7/16" "$(line "$con" 'IMDS-ADDR boot=1' | cut -d' ' -f3- | sed 's/ *$//')"
	local veth_mac
	veth_mac="$(ip netns exec "$NS" cat /sys/class/net/veth-imds/address 2>/dev/null)"
	expect_eq "$l: guest resolved 169.254.169.254 to veth-imds (ARP responder)" "$veth_mac" \
		"$(line "$con" 'IMDS-NEIGH boot=1' | awk '{print $3}')"
	expect_eq "$l: pod all.arp_ignore still 8" 8 "$(ip netns exec "$NS" sysctl -n net.ipv4.conf.all.arp_ignore)"
	guest_checks "$l" "$con"
	capture_check "$l"
	SUMMARY+=("$l: ${L_BOOT}s to cloud-init final with two sidecar restarts (first request -> final ${L_REQ_FINAL}s), the polling guest served ${R2_MS} ms after a restart")
	migrate_checks "$l" "$d" "$USER_DATA_POLL"
	vm_stop "$VM_PIDFILE" 2
}

# --- 8. continuity: from KubeVirt's cloud-init disk to the service ------------------------
# inline_user_data <user-data> <out>: the suite's user data as an inline
# volume can carry it: KubeVirt caps userDataBase64 at 2,048 decoded bytes
# (vmi-create-admitter.go, docs/annotations.md "Bad input"), so without the
# migration's and the polling guest's scripts (continuity neither migrates
# nor restarts the sidecar) and without comment lines, gzipped: cloud-init
# inflates gzip user data (user_data.py:383 at 22.4.2 and :381 at 25.1.4).
inline_user_data() {
	"$PY" - "$1" "$2" <<'PYEOF'
import gzip, re, sys
t = open(sys.argv[1]).read()
for script, until in (("imds-e2e-poll", "  - path: /var/lib/cloud/scripts/per-boot/"), ("imds-e2e-migrate", "runcmd:")):
    s = t.index("  - path: /usr/local/sbin/%s\n" % script)
    t = t[:s] + t[t.index(until, s):]
t = "".join(l for l in t.splitlines(True) if not re.match(r"\s*#(?!!|cloud-config)", l))
open(sys.argv[2], "wb").write(gzip.compress(t.encode(), 9, mtime=0))
PYEOF
}
# scenario_continuity: see the header.  KubeVirt's files come from
# tests/lib/kvci.py nocloud-vmi --inline (meta-data as json.Marshal writes it,
# pkg/cloud-init/cloud-init.go:80-85, 591; user-data the decoded
# userDataBase64, network-config the networkData); the ISO
# as KubeVirt makes it (xorrisofs -volid cidata -joliet -rock, cloud-init.go:421-433).
CONT_UUID=5d307ca9-b3ef-428c-8861-06e72d69f223
scenario_continuity() { # <dir> <label> <binding>
	local d=$1 l=$2 binding=$3
	local con1="$work/$1/console1.log" con2="$work/$1/console2.log" out
	local ud="$work/$d/user-data.gz" ud_sha nd_sha
	mkdir -p "$work/$d"
	if ! out=$(inline_user_data "$USER_DATA" "$ud" 2>&1) ||
		! out=$("$PY" "$REPO/tests/lib/kvci.py" nocloud-vmi --admission-cli "$ADMISSION_CLI" --name "$VM_NAME" \
			--namespace default --uuid "$CONT_UUID" --inline --user-data "$ud" \
			--network-data "$NETCFG_DHCP_FILE" --out "$work/$d" 2>&1) ||
		! out=$(genisoimage -quiet -output "$work/$d/cidata.iso" -volid cidata -joliet -rock \
			"$work/$d/iso/user-data" "$work/$d/iso/meta-data" "$work/$d/iso/network-config" 2>&1); then
		not_ok "$l: the VMI (inline cloudInitNoCloud) through the webhook, KubeVirt's files and their cidata ISO" "$out"
		return 1
	fi
	ud_sha=$(sha256sum <"$ud" | cut -c1-64) nd_sha=$(sha256sum <"$NETCFG_DHCP_FILE" | cut -c1-64)
	ok "$l: the VMI's inline cloudInitNoCloud (userDataBase64: $(wc -c <"$ud") bytes of gzip, $(gzip -dc "$ud" | wc -c) inflated; networkData $(wc -c <"$NETCFG_DHCP_FILE") bytes) through the webhook: imds.kubevirt.io/cloud-init of $(wc -c <"$work/$d/cloud-init") bytes; KubeVirt's meta-data $(cat "$work/$d/iso/meta-data")"
	POD_EXTRA=(--set-annotation "imds.kubevirt.io/cloud-init=@$work/$d/cloud-init"
		--del-annotation imds.kubevirt.io/user-data)
	if ! pod_up "$d" "$binding" >"$work/pod_up.out" 2>&1; then
		POD_EXTRA=()
		not_ok "$l: masquerade launcher pod, imds-server run as injected" "$(cat "$work/pod_up.out")"
		return 1
	fi
	if grep -q IMDS_USER_DATA_FILE "$SC_ENV" || ! grep -q IMDS_CLOUD_INIT= "$SC_ENV"; then
		not_ok "$l: the sidecar takes the volume's user data (IMDS_CLOUD_INIT, no IMDS_USER_DATA_FILE)" "$(cat "$SC_ENV")"
		return 1
	fi
	POD_EXTRA=()
	ok "$l: masquerade launcher pod, the sidecar configured from the VMI's cloud-init volume ($SC_AS)"
	# What the sidecar serves is the volume's, byte for byte (the guest's
	# cloud-init 22.4 fetches no network-config over HTTP: read_seeded's
	# three files, DataSourceNoCloud.py:173 at 22.4.2).
	local got_ud got_nd
	if reference_start; then
		got_ud=$(reference /v1/user-data | sha256sum | cut -c1-64)
		got_nd=$(reference /v1/network-config | sha256sum | cut -c1-64)
		reference_stop
	fi
	expect_eq "$l: the sidecar serves the volume's user-data and network-config byte for byte (sha256)" \
		"$ud_sha $nd_sha" "${got_ud:-} ${got_nd:-}"
	GUEST_ADDR=10.0.2.2/24
	VM_OVERLAY="$work/$d/disk.qcow2" VM_SERIAL="kubevirt-imds-continuity" boot_guest "$l boot 1" "$con1" \
		-drive "file=$work/$d/cidata.iso,format=raw,if=virtio,readonly=on" || return 1
	wait_mark "$l: boot 1 (from the cidata ISO) finished (report printed)" "$con1" 'IMDS-REPORT-DONE boot=1' || return 1
	local r1 r2
	r1=$(line "$con1" 'IMDS-RESULT boot=1 ')
	if [[ $r1 == *'DataSourceNoCloud'*'/dev/vd'* && $r1 == *'"errors":[]'* ]]; then
		ok "$l: boot 1 read the ISO (${r1#IMDS-RESULT boot=1 })"
	else
		not_ok "$l: boot 1 read the ISO, without errors" "$r1"
	fi
	if ! wait_mark "$l: root shell on ttyS0 before the poweroff" "$con1" "root@$VM_NAME:~# " 1 60; then
		return 1
	fi
	vm_poweroff 120
	local t2=$EPOCHREALTIME
	VM_OVERLAY="$work/$d/disk.qcow2" boot_guest "$l boot 2" "$con2" || return 1
	wait_mark "$l: boot 2 (from the service alone) finished (report printed)" "$con2" 'IMDS-REPORT-DONE boot=2' || return 1
	r2=$(line "$con2" 'IMDS-RESULT boot=2 ')
	if [[ $r2 == *'169.254.169.254'* && $r2 == *'"errors":[]'* ]] &&
		awk -v t="${t2/,/.}" '$1 >= t && / GET \/v1\/meta-data 200 /' "$SC_LOG.ts" | grep -q .; then
		ok "$l: boot 2 read the service (${r2#IMDS-RESULT boot=2 })"
	else
		not_ok "$l: boot 2 read the service, without errors" "$r2" "$(tail -n 20 "$SC_LOG")"
	fi
	local k1 k2
	k1="$(line "$con1" 'IMDS-HOSTKEYS boot=1 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	k2="$(line "$con2" 'IMDS-HOSTKEYS boot=2 ' | cut -d' ' -f3- | tr ' ' '\n' | grep .)"
	if [[ -n $k1 && $k1 == "$k2" ]]; then
		ok "$l: SSH host keys unchanged from the disk's boot to the service's ($(wc -l <<<"$k1") keys)"
	else
		not_ok "$l: SSH host keys unchanged from the disk's boot to the service's" "boot 1:" "$k1" "boot 2:" "$k2"
	fi
	# The guest's own record: cloud-init's instance-id and the raw user data it
	# stored (user-data.txt, the bytes before gzip is inflated: stages.py:487-491,
	# user_data.py:383 at 22.4.2), per boot.
	expect_eq "$l: boot 1 (the ISO) and boot 2 (the service): instance-id and the raw user-data the guest stored (sha256) are the volume's" \
		"iid=$CONT_UUID ud=$ud_sha | iid=$CONT_UUID ud=$ud_sha" \
		"$(line "$con1" 'IMDS-CI boot=1 ' | cut -d' ' -f3-) | $(line "$con2" 'IMDS-CI boot=2 ' | cut -d' ' -f3-)"
	expect_eq "$l: runcmd not run again on boot 2 (the same instance: $CONT_UUID)" 1 "$(cat "$con1" "$con2" | grep -ac 'IMDS-MARK runcmd')"
	expect_eq "$l: hostname kept on boot 2" "hostname=$VM_NAME" "$(line "$con2" 'IMDS-REPORT-DONE boot=2' | awk '{print $3}')"
	expect_eq "$l: cloud-init status done on boot 2" "done" "$(line "$con2" 'IMDS-STATUS boot=2 status:' | awk '{print $NF}')"
	vm_stop "$VM_PIDFILE" 2
	SUMMARY+=("$l: boot 1 from KubeVirt's disk, boot 2 from the service: the same instance")
}
