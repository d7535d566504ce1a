#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# shellcheck disable=SC2154  # R_* and scenario results are assigned by eval (http_lib.sh)
# http_proto: HTTP/1.x on raw sockets (tests/lib/http_raw.py): keep-alive,
# pipelining, HTTP/1.0, request smuggling shapes, bodies, the 8 KiB head and
# 64-header limits, and what llhttp's strict mode refuses.  Every answer is
# compared byte for byte, and where the server must close, the close is
# checked too (an eof: step fails when the connection stays open).
set -uo pipefail
# shellcheck source=../lib/tap.sh
source "$(dirname "$0")/../lib/tap.sh"
# shellcheck source=../lib/server.sh
source "$(dirname "$0")/../lib/server.sh"
# shellcheck source=../lib/http_lib.sh
source "$(dirname "$0")/../lib/http_lib.sh"
WANT_ETAG=1 # the sidecar: its 200 data answers carry an ETag

J='application/json'
MD=$'=instance-id: default-testvm\nlocal-hostname: testvm\n'
BIG=$TEST_TMP/big-user-data
head -c 1048576 /dev/urandom >"$BIG"
serve IMDS_RATE_LIMIT=0 IMDS_USER_DATA_FILE="$BIG" || exit 1
P=$SRV_PORT
GET_MD='GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n'
GET_HZ='GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'

# err STATUS_LINE CODE MESSAGE: the last want becomes a core error answer.
err() {
	want "$1" "$J" "={\"error\":\"$2\",\"message\":\"$3\"}"$'\n' "Connection: close"
}
# refused NAME REQUEST: the exact error of the last want, then the close.
refused() {
	raw_is "$1" "$P" "send:$2" eof:2
}

echo "# keep-alive and pipelining"
tmpf
for i in 1 2 3 4 5; do
	want "HTTP/1.1 200 OK" text/yaml "$MD"
	want_to "$F"
done
steps=()
for i in 1 2 3 4 5; do steps+=("send:$GET_MD" read:1); done
raw_is_file "keep-alive: 5 requests one after another on one connection, each answered exactly" "$F" "$P" "${steps[@]}" quiet:0.2

tmpf
want "HTTP/1.1 200 OK" text/plain "=OK"; want_to "$F"
want "HTTP/1.1 200 OK" text/yaml "$MD"; want_to "$F"
want "HTTP/1.1 404 Not Found" "$J" $'={"error":"not_found","message":"no such path"}\n'; want_to "$F"
raw_is_file "pipelining: 3 requests in one send, 3 answers in order, byte-exact; connection kept" "$F" "$P" \
	"send:${GET_HZ}${GET_MD}GET /nope HTTP/1.1\r\nHost: x\r\n\r\n" read:3 quiet:0.2

tmpf
want "HTTP/1.1 200 OK" text/plain "=OK"; want_to "$F"
want "HTTP/1.1 200 OK" text/yaml "$MD"; want_to "$F"
want "HTTP/1.1 200 OK" text/plain "=OK" "Connection: close"; want_to "$F"
raw_is_file "pipelining: the last request says Connection: close, so the third answer closes" "$F" "$P" \
	"send:${GET_HZ}${GET_MD}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" read:3 eof:2

want "HTTP/1.1 200 OK" text/plain "=OK" "Connection: close"
raw_is "pipelining: nothing after a Connection: close request is answered" "$P" \
	"send:GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n${GET_MD}${GET_MD}" read:1 eof:2

tmpf
want "HTTP/1.1 200 OK" application/octet-stream "$BIG"; want_to "$F"
want "HTTP/1.1 200 OK" text/plain "=OK"; want_to "$F"
want "HTTP/1.1 200 OK" text/yaml "$MD"; want_to "$F"
raw_is_file "pipelining behind a 1 MiB answer: all three in order, byte-exact" "$F" "$P" \
	"send:GET /v1/user-data HTTP/1.1\r\nHost: x\r\n\r\n${GET_HZ}${GET_MD}" read:3 quiet:0.1

tmpf
want "HTTP/1.1 200 OK" text/plain "=OK"; want_to "$F"
err "HTTP/1.1 400 Bad Request" bad_request "Invalid method encountered"; want_to "$F"
raw_is_file "pipelining: a good request then garbage: 200, then 400 and close" "$F" "$P" \
	"send:${GET_HZ}\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" read:1 eof:2

want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "a request sent one byte at a time is answered" "$P" "drip:2:$GET_MD" read:1

tmpf
printf 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n' "$(head -c 4000 /dev/zero | tr '\0' a)" >"$F.1"
printf 'X-Pad2: %s\r\n\r\n' "$(head -c 3000 /dev/zero | tr '\0' b)" >"$F.2"
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "a 7 KiB head in two sends 50 ms apart is answered" "$P" "sendfile:$F.1" sleep:0.05 "sendfile:$F.2" read:1

echo "# HTTP/1.0 and Connection"
want "HTTP/1.1 200 OK" text/yaml "$MD" "Connection: close"
raw_is "HTTP/1.0 without keep-alive: Connection: close, then the server closes" "$P" \
	'send:GET /v1/meta-data HTTP/1.0\r\n\r\n' read:1 eof:2
tmpf
want "HTTP/1.1 200 OK" text/yaml "$MD" "Connection: keep-alive"; want_to "$F"
want "HTTP/1.1 200 OK" text/plain "=OK" "Connection: keep-alive"; want_to "$F"
raw_is_file "HTTP/1.0 with Connection: keep-alive: answered with Connection: keep-alive, connection kept" "$F" "$P" \
	'send:GET /v1/meta-data HTTP/1.0\r\nConnection: keep-alive\r\n\r\n' read:1 \
	'send:GET /healthz HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n' read:1 quiet:0.2
want "HTTP/1.1 200 OK" text/yaml "$MD" "Connection: close"
raw_is "HTTP/1.1 with Connection: close: Connection: close, then the server closes" "$P" \
	'send:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' read:1 eof:2
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "absolute-form target (GET http://x/v1/meta-data HTTP/1.1): 200" "$P" \
	'send:GET http://x/v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n' read:1 quiet:0.1
raw_is "HTTP/1.1 with an empty Host (no authority in the target): 200" "$P" \
	'send:GET /v1/meta-data HTTP/1.1\r\nHost:\r\n\r\n' read:1
raw_is "Content-Length: 0 is no body: 200" "$P" \
	'send:GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n' read:1

echo "# Host rules and smuggling shapes: 400 and close"
err "HTTP/1.1 400 Bad Request" bad_host "Bad Request"
refused "HTTP/1.1 without Host: 400" 'GET /v1/meta-data HTTP/1.1\r\n\r\n'
refused "two Host headers: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'
refused "two Host headers, same value: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nhost: x\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Invalid header token"
refused "'Host : x' (space before the colon): 400" 'GET /v1/meta-data HTTP/1.1\r\nHost : x\r\n\r\n'
refused "'Metadata : true' (space before the colon): 400" 'GET /v1/token HTTP/1.1\r\nHost: x\r\nMetadata : true\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Content-Length can't be present with Transfer-Encoding"
refused "Content-Length + Transfer-Encoding: chunked: 400, close" \
	'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
refused "Transfer-Encoding: chunked + Content-Length: 400, close" \
	'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Duplicate Content-Length"
refused "duplicate Content-Length (same value): 400" \
	'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello'
refused "duplicate Content-Length (different values): 400" \
	'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello'
err "HTTP/1.1 400 Bad Request" bad_request "Invalid character in Content-Length"
refused "Content-Length: -1: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'
# shellcheck disable=SC2016  # backquotes are llhttp's, literal
err "HTTP/1.1 400 Bad Request" bad_request 'Request has invalid `Transfer-Encoding`'
refused "Transfer-Encoding: gzip (not chunked last): 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n'

echo "# no request body: 413 and close"
err "HTTP/1.1 413 Content Too Large" body_not_allowed "Content Too Large"
refused "a body (Content-Length: 5): 413" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'
refused "a body announced but not sent (Content-Length: 5): 413 at once" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n'
refused "a chunked body: 413" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'
refused "POST with a body: 413 (before the method check)" 'POST /v1/meta-data HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}'

echo "# the 8 KiB head and 64 headers"
# A head of exactly N bytes: request line, Host, one padded header, blank line.
mkhead() { # N file [unterminated]
	local base=$'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX-Pad: ' end=$'\r\n\r\n' pad
	[[ -n "${3:-}" ]] && end=$'\r\n'
	bytes "$base$end"
	pad=$(head -c $(($1 - BYTES)) /dev/zero | tr '\0' p)
	printf '%s%s%s' "$base" "$pad" "$end" >"$2"
}
H=$TEST_TMP/h
mkhead 8192 "$H.8192"
mkhead 8193 "$H.8193"
mkhead 9000 "$H.9000u" unterminated
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "a head of exactly 8192 bytes: 200" "$P" "sendfile:$H.8192" read:1
err "HTTP/1.1 431 Request Header Fields Too Large" head_too_large "Request Header Fields Too Large"
raw_is "a head of 8193 bytes: 431 and close" "$P" "sendfile:$H.8193" eof:2
raw_is "an unfinished head past 8 KiB: 431 and close without waiting for the rest" "$P" "sendfile:$H.9000u" eof:1
within "... answered within 0.5 s (s)" 0 0.5 "${R_first:-}"
head -c 4000 "$H.9000u" >"$H.p1"
tail -c +4001 "$H.9000u" | head -c 4000 >"$H.p2"
tail -c +8001 "$H.9000u" >"$H.p3"
raw_is "an unfinished head growing past 8 KiB over three sends: 431 and close" "$P" \
	"sendfile:$H.p1" sleep:0.05 "sendfile:$H.p2" sleep:0.05 "sendfile:$H.p3" eof:2
# 8 KiB of requests pipelined behind a complete one are not "a head past 8 KiB".
: >"$H.pipe"
for i in $(seq 300); do printf '%b' "$GET_HZ" >>"$H.pipe"; done
raw "$H.out" "$P" "sendfile:$H.pipe" read:300 quiet:0.1
expect_eq "300 pipelined requests (11 KiB) in one send: 300 answers, 200 each, connection kept" \
	"1 200x300" "$R_ok $R_codes"
{
	printf 'GET /'
	head -c 9000 /dev/zero | tr '\0' u
	printf ' HTTP/1.1\r\nHost: x\r\n\r\n'
} >"$H.url"
# docs/sidecar.md says 431 past 8 KiB of head; a target alone over 8 KiB gets the more
# specific 414 (RFC 9110 15.5.15).
err "HTTP/1.1 414 URI Too Long" uri_too_long "URI Too Long"
raw_is "a 9 KiB request target: 414 and close" "$P" "sendfile:$H.url" eof:2
hdrs() { # N file: a request with N header fields (Host included)
	{
		printf 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\n'
		for ((i = 1; i < $1; i++)); do printf 'X-H%d: v\r\n' "$i"; done
		printf '\r\n'
	} >"$2"
}
hdrs 64 "$H.h64"
hdrs 65 "$H.h65"
hdrs 200 "$H.h200"
want "HTTP/1.1 200 OK" text/yaml "$MD"
raw_is "64 header fields: 200" "$P" "sendfile:$H.h64" read:1
err "HTTP/1.1 431 Request Header Fields Too Large" too_many_headers "Request Header Fields Too Large"
raw_is "65 header fields: 431 and close" "$P" "sendfile:$H.h65" eof:2
raw_is "200 header fields: 431 and close" "$P" "sendfile:$H.h200" eof:2

echo "# what strict llhttp refuses: 400 (or 505) and close"
err "HTTP/1.1 400 Bad Request" bad_request "Invalid method encountered"
refused "NUL and binary garbage: 400" '\x00\x01\x02garbage\r\n\r\n'
refused "a TLS ClientHello: 400" '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03'
refused "lower-case method (get): 400" 'get /v1/meta-data HTTP/1.1\r\nHost: x\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Invalid header value char"
refused "bare LF line ends: 400" 'GET /v1/meta-data HTTP/1.1\nHost: x\n\n'
refused "a bare LF ending one header line: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\nX: y\r\n\r\n'
refused "NUL in a header value: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\x00y\r\n\r\n'
refused "DEL in a header value: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Missing expected LF after header value"
refused "a bare CR in a header value: 400" 'GET /v1/meta-data HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Invalid char in url path"
refused "NUL in the target: 400" 'GET /v1/meta-data\x00 HTTP/1.1\r\nHost: x\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_request "Expected HTTP/"
refused "a space inside the target: 400" 'GET /v1/meta data HTTP/1.1\r\nHost: x\r\n\r\n'
err "HTTP/1.1 400 Bad Request" bad_target "Bad Request"
refused "asterisk-form target (GET *): 400" 'GET * HTTP/1.1\r\nHost: x\r\n\r\n'
err "HTTP/1.1 505 HTTP Version Not Supported" bad_version "HTTP Version Not Supported"
refused "HTTP/2.0 in the request line: 505" 'GET /v1/meta-data HTTP/2.0\r\nHost: x\r\n\r\n'
refused "HTTP/0.9 (no version): 505" 'GET /v1/meta-data\r\n\r\n'

alive "the server survived every malformed request"
server_stop
expect_eq "exits 0 on SIGTERM" 0 "$SRV_STATUS"
tap_done
