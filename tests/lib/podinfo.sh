# podinfo.sh — the lifecycle events' downward-API files as kubelet writes them (sourced
# after server.sh): <PI>/<name> -> ..data/<name>, every file in a new timestamped folder,
# ..data swapped to it in one rename.
#   podinfo_init DIR             the folder, at rest (a LiveMigrate VM's source pod)
#   kubelet_write name=value...  the volume written again with those values changed
# shellcheck shell=bash

declare -A PODINFO
PI=
N_WRITE=0

podinfo_init() {
	PI=$1
	mkdir -p "$PI"
	PODINFO=([eviction-in-progress]='' [eviction-strategy]='' [migration-job-uid]=''
		[migration-target-ready]='' [maintenance]='')
	kubelet_write eviction-strategy=LiveMigrate
}

kubelet_write() {
	local kv d
	for kv in "$@"; do PODINFO[${kv%%=*}]=${kv#*=}; done
	N_WRITE=$((N_WRITE + 1))
	d=..2026_11_27_00_00_00.$N_WRITE
	mkdir "$PI/$d"
	for kv in "${!PODINFO[@]}"; do
		printf '%s' "${PODINFO[$kv]}" >"$PI/$d/$kv"
		[[ -L $PI/$kv ]] || ln -s "..data/$kv" "$PI/$kv"
	done
	ln -s "$d" "$PI/..data_tmp"
	mv -T "$PI/..data_tmp" "$PI/..data"
}
