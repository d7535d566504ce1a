#!/usr/bin/python3
"""Real guest-agent code from Debian's packages as HTTP clients of imds-server.

Run with /usr/bin/python3 (Debian's cloud-init and python3-botocore import only there):
  agents_client.py ec2 --url http://127.0.0.1:PORT [--token]
      cloud-init 22.4's EC2 readers, cloudinit/sources/helpers/ec2.py:
      get_instance_userdata (:143), get_instance_metadata (:233, the meta-data/ tree crawled
      by MetadataMaterializer :54) and get_instance_identity (:262), with the 2009-04-04
      version DataSourceEc2 falls back to and with latest; --token: first a session as
      DataSourceEc2._refresh_api_token does (PUT latest/api/token with
      X-aws-ec2-metadata-token-ttl-seconds, url_helper.readurl), then every read with
      X-aws-ec2-metadata-token through headers_cb, as DataSourceEc2._get_headers.
  agents_client.py botocore --url http://127.0.0.1:PORT
      botocore's IMDS fetcher (botocore/utils.py IMDSFetcher :373): _fetch_metadata_token
      (PUT latest/api/token, TTL 21600; 404/403/405 -> no token), then _get_request for
      meta-data leaves with that token, and InstanceMetadataRegionFetcher.retrieve_region
      (:750: latest/meta-data/placement/availability-zone/ minus its last letter).
  agents_client.py openstack --url http://127.0.0.1:PORT [--mac MAC=NAME ...]
      cloud-init 22.4's OpenStack reader, cloudinit/sources/helpers/openstack.py:
      MetadataReader.read_v2 (:468, :223: /openstack version index, meta_data.json,
      user_data, vendor_data.json, vendor_data2.json, network_data.json, and the EC2
      meta-data/ tree through _read_ec2_metadata :517), then convert_net_json (:526) of the
      network data with the given MACs as the guest's NICs.
Prints one JSON object on stdout; exit 0 when the agent's code returned, 1 when it raised.
"""
import argparse
import base64
import hashlib
import json
import os
import sys


def digest(data):
    if data is None:
        return None
    if isinstance(data, str):
        data = data.encode("utf-8")
    return {"len": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "b64": base64.b64encode(data).decode()}


def no_proxies():
    for k in list(os.environ):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
            del os.environ[k]


def run_ec2(args):
    from cloudinit import url_helper
    from cloudinit.sources.helpers import ec2

    out = {"token": None}
    headers = {}
    if args.token:
        # DataSourceEc2._refresh_api_token (sources/DataSourceEc2.py:580)
        resp = url_helper.readurl(
            args.url + "/latest/api/token",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"},
            headers_redact=["X-aws-ec2-metadata-token", "X-aws-ec2-metadata-token-ttl-seconds"],
            request_method="PUT")
        token = resp.contents.decode()
        out["token"] = {"len": len(token), "ttl": resp.headers.get("X-aws-ec2-metadata-token-ttl-seconds")}
        headers = {"X-aws-ec2-metadata-token": token}

    def headers_cb(url=""):
        return dict(headers)

    for ver in ("2009-04-04", "latest"):
        kw = dict(api_version=ver, metadata_address=args.url, headers_cb=headers_cb,
                  timeout=5, retries=0)
        md = ec2.get_instance_metadata(**kw)
        ud = ec2.get_instance_userdata(**kw)
        ident = ec2.get_instance_identity(**kw)
        out[ver] = {"meta_data": md, "user_data": digest(ud), "identity": ident}
    return out


def run_botocore(args):
    from botocore import utils

    f = utils.IMDSFetcher(base_url=args.url, timeout=5, num_attempts=1)
    token = f._fetch_metadata_token()
    out = {"token_len": len(token) if token else None}
    leaves = {}
    for path in ("instance-id", "hostname", "local-hostname", "instance-type",
                 "public-keys/", "public-keys/0/openssh-key"):
        try:
            r = f._get_request("latest/meta-data/" + path, None, token=token)
            leaves[path] = r.text
        except f._RETRIES_EXCEEDED_ERROR_CLS:
            leaves[path] = None
    out["meta_data"] = leaves
    # The region provider's own method, token and all.
    rf = utils.InstanceMetadataRegionFetcher(base_url=args.url, timeout=5, num_attempts=1)
    out["region"] = rf.retrieve_region()
    # No credentials are served: the IAM fetcher returns {} after its attempts.
    cf = utils.InstanceMetadataFetcher(base_url=args.url, timeout=5, num_attempts=1)
    out["iam_credentials"] = cf.retrieve_iam_role_credentials()
    return out


def run_openstack(args):
    from cloudinit.sources.helpers import openstack

    reader = openstack.MetadataReader(args.url, timeout=5, retries=0)
    d = reader.read_v2()
    macs = dict(m.split("=", 1) for m in args.mac)
    out = {
        "version": reader._find_working_version(),
        "meta_data": d.get("metadata"),
        "user_data": digest(d.get("userdata")),
        "vendor_data": d.get("vendordata"),
        "vendor_data2": d.get("vendordata2"),
        "network_data": d.get("networkdata"),
        "ec2_meta_data": d.get("ec2-metadata"),
        "network_config": openstack.convert_net_json(d.get("networkdata"), known_macs=macs),
    }
    if isinstance(out["meta_data"], dict) and "random_seed" in out["meta_data"]:
        out["meta_data"]["random_seed"] = digest(out["meta_data"]["random_seed"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("agent", choices=["ec2", "botocore", "openstack"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", action="store_true")
    ap.add_argument("--mac", action="append", default=[])
    args = ap.parse_args()
    no_proxies()
    run = {"ec2": run_ec2, "botocore": run_botocore, "openstack": run_openstack}[args.agent]
    try:
        out = run(args)
        status = 0
    except Exception as e:  # the agent's own failure, reported
        out = {"error": "%s: %s" % (type(e).__name__, e)}
        status = 1
    json.dump(out, sys.stdout, sort_keys=True, default=str)
    sys.stdout.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
