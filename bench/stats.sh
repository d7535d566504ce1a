# stats.sh — figures of a bench's samples (sourced).
# shellcheck shell=bash

# stats V...: "median (min..max)" of numbers
stats() {
	printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {
		if (NR == 0) { print "n/a"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f (%.1f..%.1f)", m, v[1], v[NR] }'
}

# p99 V...: the 99th percentile of numbers (nearest rank)
p99() {
	printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END { i = int(NR * 0.99 + 0.999); if (i < 1) i = 1; print v[i] }'
}
