#!/usr/bin/env bash
# imds-variants: debug (variant-independent: tests/run.sh runs it in one build)
# Static checks of the deployment tooling (issue 5): shellcheck on every shell
# script of the repository, hack/check-context.sh (no kubectl/virtctl without
# --context, no kind without --name) on the repository and on a bad fixture,
# `make -n` of every seed target, tests/e2e/run.sh in its dry mode (every
# command it would run names its cluster), and the unit tests of
# tests/e2e/lib.sh. Variant-independent: run in debug only.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/lib/tap.sh
. tests/lib/tap.sh
# shellcheck source=tests/e2e/lib.sh
. tests/e2e/lib.sh

WORK=$(mktemp -d "${IMDS_TEST_TMPDIR:-/tmp}/deploy-lint.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# --- shellcheck: every *.sh and every file with a sh/bash shebang; not the
# user-data of tests/fixtures/kubevirt-cloudinit/, which is KubeVirt's own
# output kept byte for byte (a guest's script, not ours: 02's `echo done`).
mapfile -t scripts < <(
	{
		find . \( -path ./tmp -o -path ./build -o -path ./.git -o -name node_modules \) -prune \
			-o -type f -name '*.sh' -print
		find . \( -path ./tmp -o -path ./build -o -path ./.git -o -name node_modules \
			-o -path ./tests/fixtures/kubevirt-cloudinit \) -prune \
			-o -type f ! -name '*.*' -print0 | xargs -0 -r grep -lE '^#!.*\b(ba)?sh\b' 2>/dev/null
	} | sed 's#^\./##' | sort -u
)
if ! command -v shellcheck >/dev/null; then
	not_ok "shellcheck installed (hack/install-deps.sh deploy)"
else
	# One shellcheck per script, as many at once as there are cores (each
	# takes 1-2 s: -x reads every file a script sources); each one's output
	# and status in $WORK/sc, then one TAP line per script in order.
	mkdir -p "$WORK/sc"
	# shellcheck disable=SC2016 # the $1, $2 are that sh's, not this script's
	for i in "${!scripts[@]}"; do printf '%s\0%s\0' "$i" "${scripts[i]}"; done |
		xargs -0 -n 2 -P "$(nproc)" sh -c \
			'shellcheck -x -P SCRIPTDIR "$2" >"$0/$1.out" 2>&1; echo $? >"$0/$1.rc"' "$WORK/sc"
	for i in "${!scripts[@]}"; do
		if [[ $(cat "$WORK/sc/$i.rc" 2>/dev/null) == 0 ]]; then
			ok "shellcheck ${scripts[i]}"
		else
			not_ok "shellcheck ${scripts[i]}" "command: shellcheck -x -P SCRIPTDIR ${scripts[i]}" \
				"$(cat "$WORK/sc/$i.out" 2>/dev/null)"
		fi
	done
fi

# --- kubectl/virtctl --context, kind --name
check "hack/check-context.sh: every kubectl/virtctl call names its context" hack/check-context.sh
mkdir -p "$WORK/fixture"
# (KCTL/VCTL placeholders: this file is scanned too)
sed -e 's/KCTL/kubectl/g' -e 's/VCTL/virtctl/g' -e 's/KVAR/KUBECTL/g' -e 's/KIND /kind /g' \
	>"$WORK/fixture/bad.sh" <<'BAD'
#!/bin/bash
KCTL get pods
out=$(KCTL -n x get vm)
"$KVAR" apply -f x
KCTL \
  get pods
VCTL console vm
KIND load docker-image x
KCTL --context ok get pods
KCTL kustomize deploy/base
for t in docker KCTL; do :; done
curl -o "$VIRTCTL" https://example.invalid/virtctl
BAD
printf 'deploy:\n\t%s apply -k deploy/base\n' "kube""ctl" >"$WORK/fixture/Makefile"
expect_eq "hack/check-context.sh finds the 7 bad calls of a fixture" 7 \
	"$(hack/check-context.sh "$WORK/fixture" | grep -c .)"

# --- make -n of the seed targets (implementation-plan.md) and the rest
for t in build build-server build-webhook test test-e2e docker-build docker-build-server \
	docker-build-webhook docker-build-node docker-build-all kind-load kind-load-all deploy deploy-webhook \
	generate-certs undeploy static-webhook help; do
	check "make -n $t" make -n --no-print-directory "$t"
done
out=$(make -n --no-print-directory kind-load deploy KIND_CLUSTER_NAME=e2e-x 2>&1)
if grep -q -- '--name e2e-x' <<<"$out" && grep -q -- '--context kind-e2e-x' <<<"$out" &&
	! grep -E '(^|[ ;])kubectl ' <<<"$out" | grep -qv -- '--context'; then
	ok "make: KIND_CLUSTER_NAME gives --name and --context kind-<name> everywhere"
else
	not_ok "make: KIND_CLUSTER_NAME gives --name and --context kind-<name> everywhere" "$out"
fi
out=$(make -n --no-print-directory deploy-webhook KUBE_CONTEXT=other-ctx 2>&1)
expect_eq "make deploy-webhook honours KUBE_CONTEXT" \
	"kubectl --context other-ctx apply -k deploy/overlays/manual" "$out"
# The three images (the node agent's for deploy/node, issue 29), built and loaded alike.
out=$(make -n --no-print-directory docker-build kind-load IMAGE_TAG=t1 2>&1)
expect_eq "make docker-build / kind-load: the three images, each from its Dockerfile, tagged IMAGE_TAG" \
	"Dockerfile kubevirt-imds-server:t1|Dockerfile.node kubevirt-imds-node:t1|Dockerfile.webhook kubevirt-imds-webhook:t1|load kubevirt-imds-node:t1|load kubevirt-imds-server:t1|load kubevirt-imds-webhook:t1" \
	"$({ sed -n 's/.* build -f \([^ ]*\) -t \([^ ]*\) .*/\1 \2/p' <<<"$out"; sed -n 's/.* load docker-image \([^ ]*\) .*/load \1/p' <<<"$out"; } | sort | paste -sd'|')"
help=$(make --no-print-directory help 2>&1)
for t in build-server build-webhook docker-build docker-build-node docker-build-all kind-load kind-load-all \
	deploy deploy-webhook generate-certs test-e2e; do
	if grep -qE "(^|[ ;,(])$t([ ;,:)]|$)" <<<"$help"; then
		ok "make help lists $t"
	else
		not_ok "make help lists $t"
	fi
done

# --- tests/e2e/run.sh, dry mode
out=$(E2E_DRY_RUN=1 KIND_CLUSTER_NAME=dry-x KUBE_CONTEXT='' tests/e2e/run.sh 2>&1)
st=$?
expect_eq "tests/e2e/run.sh dry mode exits 0" 0 "$st"
cmds=$(sed -n 's/^+ //p' <<<"$out")
bad=$(grep -E '^(kubectl|[^ ]*/virtctl[^ ]*) ' <<<"$cmds" | grep -v -- '--context kind-dry-x' || true)
bad+=$(grep -E '^kind ' <<<"$cmds" | grep -v -- '--name dry-x' || true)
if [[ -z $bad && $(grep -cE '^(kubectl|[^ ]*/virtctl[^ ]*) ' <<<"$cmds") -gt 10 ]]; then
	ok "tests/e2e/run.sh: every kubectl/virtctl call carries --context, kind --name"
else
	not_ok "tests/e2e/run.sh: every kubectl/virtctl call carries --context, kind --name" "$bad" "$cmds"
fi
if grep -q 'virtctl.* console ' <<<"$cmds"; then
	ok "tests/e2e/run.sh: checks inside the guest over virtctl console"
else
	not_ok "tests/e2e/run.sh: checks inside the guest over virtctl console" "$cmds"
fi
expect_eq "KubeVirt version pinned in one place" 1 \
	"$(grep -cE '^KUBEVIRT_VERSION=v[0-9]+\.[0-9]+\.[0-9]+$' tests/e2e/run.sh)"

# --- unit tests of tests/e2e/lib.sh
expect_eq "e2e_context" kind-foo "$(e2e_context foo)"
if printf 'kind\nimds\n' | e2e_cluster_listed imds; then ok "e2e_cluster_listed: present"; else not_ok "e2e_cluster_listed: present"; fi
if printf 'imds-2\nxkind\n' | e2e_cluster_listed imds; then not_ok "e2e_cluster_listed: no prefix match"; else ok "e2e_cluster_listed: no prefix match"; fi
expect_eq "e2e_kubevirt_url" \
	https://github.com/kubevirt/kubevirt/releases/download/v1.6.0/kubevirt-cr.yaml \
	"$(e2e_kubevirt_url v1.6.0 kubevirt-cr.yaml)"
console=$'$ echo "BEGIN""-ID"; curl ...\r\nBEGIN-ID\r\n{"namespace":"ns1","vmName":"vm-a","podName":"virt-launcher-vm-a-x"}\r\nEND-ID\r\n$ '
expect_eq "e2e_between: lines between the markers, CR removed" \
	'{"namespace":"ns1","vmName":"vm-a","podName":"virt-launcher-vm-a-x"}' \
	"$(e2e_between BEGIN-ID END-ID <<<"$console")"
expect_eq "e2e_json_string" vm-a "$(e2e_between BEGIN-ID END-ID <<<"$console" | e2e_json_string vmName)"
expect_eq "e2e_json_string: absent key" "" "$(e2e_json_string nope <<<'{"a":"b"}')"
payload=$(printf '{"iss":"k","sub":"system:serviceaccount:ns1:default"}' | base64 -w0 | tr '/+' '_-' | tr -d '=')
expect_eq "e2e_jwt_claim: base64url payload without padding" system:serviceaccount:ns1:default \
	"$(e2e_jwt_claim sub <<<"eyJhbGciOiJSUzI1NiJ9.$payload.c2ln")"
expect_eq "e2e_kv: last value, CR removed" 400 "$(e2e_kv CODE <<<$'CODE=200\r\nCODE=400\r\n')"
tap_done
