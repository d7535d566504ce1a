"""The EC2 events of tests/integration/lifecycle.sh read by botocore's own IMDS client.

Run with /usr/bin/python3 (Debian's python3-botocore imports only there):
  lifecycle_ec2.py --url http://127.0.0.1:PORT
botocore's IMDSFetcher (botocore/utils.py): _fetch_metadata_token (PUT latest/api/token),
then _get_request for meta-data/events/maintenance/scheduled and meta-data/spot/instance-action
with the token.  Each event's NotBefore/NotAfter are parsed with the layout
aws-node-termination-handler uses, Go's "2 Jan 2006 15:04:05 GMT"
(pkg/monitor/scheduledevent/scheduled-event-monitor.go), and spot's time as RFC 3339.
Prints one JSON line: {"token_len", "events": [...], "spot": null | {...}}.
"""
import argparse
import datetime
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    args = ap.parse_args()
    from botocore import utils

    f = utils.IMDSFetcher(base_url=args.url, timeout=5, num_attempts=1)
    token = f._fetch_metadata_token()
    once = lambda response: False  # noqa: E731  (one attempt; the status is checked here)
    r = f._get_request("latest/meta-data/events/maintenance/scheduled", once, token=token)
    if r.status_code != 200:
        sys.exit("events/maintenance/scheduled: HTTP %d" % r.status_code)
    events = json.loads(r.text)
    for e in events:
        for k in ("NotBefore", "NotAfter"):
            # %d takes "2" as Go's "2" does; the rest is fixed.
            t = datetime.datetime.strptime(e[k], "%d %b %Y %H:%M:%S GMT")
            e[k + "Parsed"] = t.replace(tzinfo=datetime.timezone.utc).isoformat()
    spot = None
    r = f._get_request("latest/meta-data/spot/instance-action", once, token=token)
    if r.status_code == 200:
        spot = json.loads(r.text)
        datetime.datetime.strptime(spot["time"], "%Y-%m-%dT%H:%M:%SZ")
    elif r.status_code != 404:
        sys.exit("spot/instance-action: HTTP %d" % r.status_code)
    json.dump({"token_len": len(token or ""), "events": events, "spot": spot}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
