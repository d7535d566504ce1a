# shellcheck shell=bash disable=SC2154,SC2034 # the suite's globals: vm_boot.sh sets and reads them
# vm_guest.sh — the VM suite's guest side: the user data every guest
# boots with (its scripts print what the guest saw on its console).
# Sourced by tests/integration/vm_boot.sh after tests/lib/tap.sh, vm.sh and
# netns.sh; its functions use the suite's globals (work, SC_*, NS*, POD_*,
# VM_*, GUEST_*, SUMMARY; the suite's header says what each scenario does).

VM_LIB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# guest_user_data: the suite's user data (USER_DATA, under $work), the same
# with the link-local guest's poll (USER_DATA_POLL) and FILE_CONTENT, what
# its write_files writes
guest_user_data() {
FILE_CONTENT='written by write_files from the imds sidecar: grüße ✓'
USER_DATA=$work/user-data
cat >"$USER_DATA" <<EOF
#cloud-config
# kubevirt-imds VM test (tests/integration/vm_boot.sh). No hostname here: it
# must come from meta-data.
final_message: "IMDS-FINAL cloud-init \$VERSION finished, up \$UPTIME s"
write_files:
  - path: /etc/imds-e2e.txt
    permissions: '0644'
    content: "$FILE_CONTENT"
EOF
cat >>"$USER_DATA" <<'EOF'
  - path: /usr/local/sbin/imds-e2e-say
    permissions: '0755'
    content: |
      #!/bin/sh
      # Its standard input to the console: gathered first, then one write on a
      # fresh open, retried.  The serial getty's autologin hangs up (vhangup)
      # every descriptor of the tty opened before it, at whatever point of the
      # boot it starts; a write on such a descriptor fails (EIO), and a runcmd
      # whose last write failed fails cloud-init ("Runparts: 1 failures").
      out=$(cat)
      for i in 1 2 3 4 5; do printf '%s\n' "$out" 2>/dev/null >/dev/ttyS0 && exit 0; sleep 0.5; done
      exit 1
  - path: /usr/local/sbin/imds-e2e-fetch
    permissions: '0755'
    content: |
      #!/bin/sh
      # The guest's own requests to the sidecar, printed on the console:
      # over IPv4, or over IPv6 when the guest has no IPv4 route (IPv6-only).
      u=http://169.254.169.254/v1
      ip -4 route get 169.254.169.254 >/dev/null 2>&1 || u='http://[fd00:ec2::254]/v1'
      echo "${u%/v1}" >/run/imds-e2e-base
      id=$(curl -g -s -m 10 -H 'Metadata: true' $u/identity | base64 -w0)
      tok=$(curl -g -s -m 10 -H 'Metadata: true' $u/token | base64 -w0)
      st_id=$(curl -g -s -m 10 -o /dev/null -w '%{http_code}' $u/identity)
      st_tok=$(curl -g -s -m 10 -o /dev/null -w '%{http_code}' $u/token)
      lat=$(curl -g -s -m 10 -o /dev/null -H 'Metadata: true' -w '%{time_connect} %{time_total}' $u/identity)
      # OpenStack's link-local address, from the guest's own link-local one
      ll=$(curl -g -s -m 5 -H 'Metadata: true' 'http://[fe80::a9fe:a9fe%eth0]/v1/identity' | base64 -w0)
      {
        echo "IMDS-IDENTITY-BEGIN $id IMDS-IDENTITY-END"
        echo "IMDS-TOKEN-BEGIN $tok IMDS-TOKEN-END"
        echo "IMDS-NOHEADER identity=$st_id token=$st_tok"
        echo "IMDS-LATENCY $lat"
        echo "IMDS-V6LL-BEGIN $ll IMDS-V6LL-END"
        echo "IMDS-FILE $(base64 -w0 </etc/imds-e2e.txt)"
      } | /usr/local/sbin/imds-e2e-say
  - path: /usr/local/sbin/imds-e2e-report
    permissions: '0755'
    content: |
      #!/bin/sh
      # Per boot, outside cloud-final (systemd-run), once cloud-init is done;
      # written by imds-e2e-say (the getty's hangup).
      n=$1
      while [ ! -e /run/cloud-init/result.json ]; do sleep 0.5; done
      out=$(exec 2>&1
      cloud-init status --long 2>&1 | sed "s/^/IMDS-STATUS boot=$n /"
      echo "IMDS-RESULT boot=$n $(tr -d ' \n' </run/cloud-init/result.json)"
      echo "IMDS-ADDR boot=$n $(ip -4 -o addr show dev eth0 | awk '{print $4}' | tr '\n' ' ')"
      echo "IMDS-ADDR6 boot=$n $(ip -6 -o addr show dev eth0 scope global | awk '{print $4}' | tr '\n' ' ')"
      echo "IMDS-NEIGH boot=$n $(ip neigh show 169.254.169.254 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')"
      echo "IMDS-QUERY boot=$n $(cloud-init query --format 'role={{ ds.meta_data.role }} tier={{ ds.meta_data.tier }}' 2>&1)"
      # OpenStack's meta_data.json carries the custom meta-data under meta
      echo "IMDS-QUERY-OS boot=$n $(cloud-init query --format 'role={{ ds.meta_data.meta.role }} tier={{ ds.meta_data.meta.tier }}' 2>&1)"
      echo "IMDS-DS boot=$n $(cloud-init query --format 'platform={{ v1.platform }} subplatform={{ v1.subplatform }} iid={{ v1.instance_id }}' 2>&1)"
      echo "IMDS-NETCFG boot=$n $(grep -ao 'Applying network configuration from [a-z]* bringup=[A-Za-z]*' /var/log/cloud-init.log | tail -n 1)"
      echo "IMDS-CI boot=$n iid=$(cat /var/lib/cloud/data/instance-id) ud=$(sha256sum </var/lib/cloud/instance/user-data.txt | cut -c1-64)"
      echo "IMDS-OPENSTACK boot=$n $(/usr/local/sbin/imds-e2e-openstack 2>/dev/null | tr '\n' ' ')"
      echo "IMDS-REPORT-DONE boot=$n hostname=$(hostname)")
      printf '%s\n' "$out" | /usr/local/sbin/imds-e2e-say
  - path: /usr/local/sbin/imds-e2e-openstack
    permissions: '0755'
    content: |
      #!/usr/bin/python3
      # cloud-init's own OpenStack metadata reader, as DataSourceOpenStack
      # runs it, against the sidecar's /openstack: one JSON line of what it read.
      import hashlib, json
      from cloudinit.sources.helpers import openstack
      try:
          try:
              base = open("/run/imds-e2e-base").read().strip()
          except OSError:
              base = "http://169.254.169.254"
          d = openstack.MetadataReader(base, timeout=5, retries=2).read_v2()
      except Exception as e:
          print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}))
          raise SystemExit(0)
      md, ud = d.get("metadata") or {}, d.get("userdata") or b""
      if isinstance(ud, str):
          ud = ud.encode()
      nd = d.get("networkdata") or {}
      print(json.dumps({"uuid": md.get("uuid"), "hostname": md.get("hostname"),
                        "public_keys": sorted((md.get("public_keys") or {}).keys()),
                        "meta": md.get("meta"), "userdata_sha256": hashlib.sha256(ud).hexdigest(),
                        "vendordata": sorted((d.get("vendordata") or {}).keys()),
                        "networkdata": sorted(nd.keys())}, sort_keys=True))
  - path: /usr/local/sbin/imds-e2e-poll
    permissions: '0755'
    content: |
      #!/usr/bin/python3
      # A guest agent asking every 20 ms while the sidecar is killed and
      # restarted (scenario linklocal): prints how long it went unanswered.
      import http.client, time
      def say(line):
          # a fresh open per line, retried: the serial getty's hangup
          for _ in range(5):
              try:
                  with open("/dev/ttyS0", "w") as tty:
                      tty.write(line + "\n")
                  return
              except OSError:
                  time.sleep(0.2)
      say("IMDS-POLL-START")
      t0, fails, first = time.monotonic(), 0, 0.0
      while time.monotonic() - t0 < 60:
          try:
              c = http.client.HTTPConnection("169.254.169.254", 80, timeout=2)
              c.request("GET", "/v1/meta-data")
              ok = c.getresponse().status == 200
              c.close()
          except OSError:
              ok = False
          if ok and fails:
              ms = round((time.monotonic() - first) * 1000)
              say("IMDS-POLL-BACK fails=%d unanswered_ms=%d" % (fails, ms))
              raise SystemExit(0)
          if not ok:
              first = first or time.monotonic()
              fails += 1
          time.sleep(0.02)
      say("IMDS-POLL-TIMEOUT fails=%d" % fails)
  - path: /var/lib/cloud/scripts/per-boot/imds-e2e-boot.sh
    permissions: '0755'
    content: |
      #!/bin/sh
      n=$(( $(cat /var/lib/imds-e2e-boots 2>/dev/null || echo 0) + 1 ))
      echo "$n" >/var/lib/imds-e2e-boots
      # one line, one write: the console is shared with the root shell's prompt
      fps=$(for f in /etc/ssh/ssh_host_*_key.pub; do ssh-keygen -lf "$f" | awk '{print $NF "=" $2}'; done | sort | tr '\n' ' ')
      echo "IMDS-HOSTKEYS boot=$n $fps" | /usr/local/sbin/imds-e2e-say
      systemd-run --no-block --unit="imds-e2e-report-$n" /usr/local/sbin/imds-e2e-report "$n"
runcmd:
  - [ sh, -c, 'echo "IMDS-MARK runcmd hostname=$(hostname)" | /usr/local/sbin/imds-e2e-say' ]
  - [ /usr/local/sbin/imds-e2e-fetch ]
EOF
# The guest's side of a live migration (migrate_checks, tests/lib/guest_migrate.py),
# one more write_files entry, before runcmd.
{
	echo '  - path: /usr/local/sbin/imds-e2e-migrate'
	echo "    permissions: '0755'"
	echo '    content: |'
	sed 's/^/      /' "$VM_LIB/guest_migrate.py"
} >"$work/migrate.part"
sed -i "/^runcmd:\$/e cat '$work/migrate.part'" "$USER_DATA"

# The link-local guest also polls through a sidecar restart in its runcmd,
# before it fetches identity and token from the restarted process.
USER_DATA_POLL=$work/user-data-poll
sed 's|^  - \[ /usr/local/sbin/imds-e2e-fetch \]$|  - [ /usr/local/sbin/imds-e2e-poll ]\n&|' "$USER_DATA" >"$USER_DATA_POLL"
}
